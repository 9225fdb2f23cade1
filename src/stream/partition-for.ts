/**
 * Partition routing. The hash is part of the stored state's layout: a key must
 * land on the same partition forever, so this function never changes.
 *
 * partitionFor(key, P) = murmur3_x86_32(utf8(key), seed 42) mod P (unsigned),
 * where `key` is the canonical key encoding from ./key.ts. Seed 42 is the one
 * Spark's HashPartitioning uses.
 */
import { murmur3Utf8 } from "../lib/murmur3";

export const PARTITION_SEED = 42;

export function partitionFor(key: string, partitions: number): number {
  return murmur3Utf8(key, PARTITION_SEED) % partitions;
}

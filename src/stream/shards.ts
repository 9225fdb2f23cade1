/**
 * Ingest shards (DESIGN §12): a stream's batches are judged by S
 * Coordinators, each with its own micro-batches and idempotency records, all
 * over the same partitions. Which shard judges a batch is a function of its
 * batch id alone (batch ids are scoped by source, so a (source, batch id) pair
 * always lands on one shard), and each shard's commit numbers start at its
 * own base, so a commit number says which shard made it and row ids stay
 * unique across the stream.
 */
import { z } from "zod";
import { murmur3Utf8 } from "../lib/murmur3";

/** 256 shards of ~500 single-event requests a second each: 128,000 a second, past the seed's 50,000 (docs/SCALING.md). */
export const MAX_SHARDS = 256;
/** Shard k numbers its commits k × 10^12 + 1, + 2, …: decimal, so that an id shows its shard; 256 × 10^12 is well inside 2^53. */
export const SHARD_SEQ_BASE = 1_000_000_000_000;
/** Not the partition seed (42): which shard judges a batch says nothing of where its keys live. */
const SHARD_SEED = 0x5eed;

export const shardsOf = (config: { shards?: number }): number => config.shards ?? 1;

/**
 * The shards that take new batches: 0 … intakeShards − 1. A PATCH to fewer
 * shards (src/coordinator/shard-count.ts) leaves the others holding their
 * output, their commits and their remembered batch ids, taking none; `shards`
 * counts every shard the stream has (reads, delivery and the clock span them).
 */
export const intakeShardsOf = (config: { shards?: number; intakeShards?: number }): number => config.intakeShards ?? shardsOf(config);

/** Whether a stream has several shards: its watermark is then its clock's (src/clock), and shard 0 answers reads for all of them. */
export const isSharded = (config: { shards?: number }): boolean => shardsOf(config) > 1;

/** The stream config's `shards` (src/stream/config.ts). */
export const shardsField = z
  .number()
  .int()
  .min(1)
  .max(MAX_SHARDS)
  .default(1)
  .describe(`ingest shards: Coordinators that each judge a share of the batches, under one global watermark (DESIGN §12); 1–${MAX_SHARDS}; bound at creation`);

/** The shard that judges batch `batchId` of a stream with `shards` shards. */
export function shardFor(batchId: string, shards: number): number {
  return shards <= 1 ? 0 : murmur3Utf8(batchId, SHARD_SEED) % shards;
}

/** The commit number before shard k's first (its lastSeq while it has none). */
export const seqBase = (shard: number): number => shard * SHARD_SEQ_BASE;

/** Which shard made commit `seq`. */
export const shardOfSeq = (seq: number): number => Math.floor(seq / SHARD_SEQ_BASE);

/** Shard k's commit numbers lie above seqBase(k) and below shardEnd(k). */
export const shardEnd = (k: number): number => seqBase(k + 1);

/** The shards of a stream, 0 first. */
export const shardList = (shards: number): number[] => Array.from({ length: shards }, (_, k) => k);

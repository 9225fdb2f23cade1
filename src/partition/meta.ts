/**
 * The partition's meta row (one row, id 1) as a value: the incarnation of
 * the stream it holds, its watermark, key count, earliest expiry, layout, the
 * small ledger entries and the open chunk of names. Pure; its store is
 * src/partition/meta-store.ts.
 */
import type { Layout } from "./layout";

/**
 * Which incarnation of the stream it holds, its watermark, its key count, a
 * lower bound of its earliest expiry, and its layout, fixed by its first
 * batch: expiry bucket width (null: none chosen yet), whether keys are
 * hashed, and the base of its relative buckets
 * (null: absolute, src/partition/layout.ts).
 */
export type PartitionMeta = {
  epoch: string;
  watermark: number;
  rows: number;
  next_expiry: number | null;
  width: number | null;
  hashed: number;
  /** the decision ledger's small entries, in the meta row (which every apply writes anyway): JSON PendingEntries, or null */
  pending: string | null;
  /** the open chunk of kept batches' names (JSON NameChunk, src/partition/receipts.ts), or null */
  names: string | null;
  base: number | null;
  /** the keyed key hash's secret (src/stream/keyed-key-hash.ts), drawn with the layout; null: keys as text or hashed unkeyed */
  hash_key: string | null;
  /** the open key segment (src/partition/open-segment.ts): keys added since the last seal; null: none */
  open: Uint8Array | null;
};

/** How this partition stores its keys (null: it has stored none yet). */
export function layoutOf(meta: PartitionMeta): Layout | null {
  return meta.width === null ? null : { hashed: meta.hashed, hashKey: meta.hash_key, width: meta.width, base: meta.base };
}

/** A partition's meta row before it holds anything (first use, or a new incarnation's epoch). */
export const freshMeta = (epoch: string): PartitionMeta => ({
  epoch,
  watermark: 0,
  rows: 0,
  next_expiry: null,
  width: null,
  hashed: 0,
  pending: null,
  names: null,
  base: null,
  hash_key: null,
  open: null,
});

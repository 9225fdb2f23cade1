/**
 * The partition's meta row (one row, id 1): the incarnation of the stream it
 * holds, its watermark, key count, earliest expiry, layout, the small ledger
 * entries and the open chunk of names. Only the Partition writes it, so it is
 * read once and then kept.
 */
import type { Layout } from "./layout";

/**
 * Which incarnation of the stream it holds, its watermark, its key count, a
 * lower bound of its earliest expiry, and its layout, fixed by its first
 * batch: expiry bucket width (null: none chosen yet), whether keys are
 * hashed, which bucket `front` holds, and the base of its relative buckets
 * (null: absolute, src/partition/layout.ts).
 */
export type PartitionMeta = {
  epoch: string;
  watermark: number;
  rows: number;
  next_expiry: number | null;
  width: number | null;
  hashed: number;
  front_b: number | null;
  /** the decision ledger's small entries, in the meta row (which every apply writes anyway): JSON PendingEntries, or null */
  pending: string | null;
  /** the open chunk of kept batches' names (JSON NameChunk, src/partition/receipts.ts), or null */
  names: string | null;
  base: number | null;
  /** the keyed key hash's secret (src/stream/keyed-key-hash.ts), drawn with the layout; null: keys as text or hashed unkeyed */
  hash_key: string | null;
};

/** How this partition stores its keys (null: it has stored none yet). */
export function layoutOf(meta: PartitionMeta): Layout | null {
  return meta.width === null ? null : { hashed: meta.hashed, hashKey: meta.hash_key, width: meta.width, base: meta.base };
}

/** The meta row, read once and kept; callers get copies, and changes reach it through save(). */
export class MetaStore {
  /** the row as stored (null: none; undefined: not read yet) */
  private cached: PartitionMeta | null | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The row, if it holds this epoch's state. */
  current(epoch: string): PartitionMeta | null {
    if (this.cached === undefined) {
      this.cached =
        this.sql
          .exec<PartitionMeta>("SELECT epoch, watermark, rows, next_expiry, width, hashed, front_b, pending, names, base, hash_key FROM meta")
          .toArray()[0] ?? null;
    }
    return this.cached && this.cached.epoch === epoch ? { ...this.cached } : null;
  }

  /** First use, or state left by a deleted incarnation of the stream: every table emptied, and a fresh row for `epoch`. */
  begin(epoch: string): PartitionMeta {
    this.sql.exec("DELETE FROM keys; DELETE FROM front; DELETE FROM ledger; DELETE FROM kept_names; DELETE FROM receipts;");
    const fresh: PartitionMeta = {
      epoch,
      watermark: 0,
      rows: 0,
      next_expiry: null,
      width: null,
      hashed: 0,
      front_b: null,
      pending: null,
      names: null,
      base: null,
      hash_key: null,
    };
    this.save(fresh);
    return { ...fresh };
  }

  save(m: PartitionMeta): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, front_b, pending, names, base, hash_key) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      m.epoch,
      m.watermark,
      m.rows,
      m.next_expiry,
      m.width,
      m.hashed,
      m.front_b,
      m.pending,
      m.names,
      m.base,
      m.hash_key,
    );
    this.cached = { ...m };
  }

  /** Read again next time (after a rollback, or once storage was deleted). */
  forget(): void {
    this.cached = undefined;
  }
}

/**
 * The meta row's store. Only the Partition writes the row, so it is read
 * once and then kept; a rollback drops the copy (forget()).
 */
import { freshMeta, type PartitionMeta } from "./meta";
import { blobOf } from "./segment-rows";

/** The meta row, read once and kept; callers get copies, and changes reach it through save(). */
export class MetaStore {
  /** the row as stored (null: none; undefined: not read yet) */
  private cached: PartitionMeta | null | undefined;

  /** inside savedOnce(): saves are kept here and written once at its end */
  private holding = false;
  private unsaved = false;

  constructor(private readonly sql: SqlStorage) {}

  /** The row, if it holds this epoch's state. */
  current(epoch: string): PartitionMeta | null {
    if (this.cached === undefined) {
      const row = this.sql
        .exec<Omit<PartitionMeta, "open"> & { open: ArrayBuffer | null }>(
          "SELECT epoch, watermark, rows, next_expiry, width, hashed, pending, names, base, hash_key, open FROM meta",
        )
        .toArray()[0];
      this.cached = row ? { ...row, open: row.open === null ? null : new Uint8Array(row.open) } : null;
    }
    return this.cached && this.cached.epoch === epoch ? { ...this.cached } : null;
  }

  /** First use, or state left by a deleted incarnation of the stream: every table emptied, and a fresh row for `epoch`. */
  begin(epoch: string): PartitionMeta {
    this.sql.exec("DELETE FROM segments; DELETE FROM ledger; DELETE FROM kept_names; DELETE FROM receipts; DELETE FROM inherited;");
    const fresh = freshMeta(epoch);
    this.save(fresh);
    return { ...fresh };
  }

  save(m: PartitionMeta): void {
    this.cached = { ...m };
    if (this.holding) this.unsaved = true;
    else this.write(m);
  }

  /** `fn`'s saves of the row written once, at its end (calls judged together: src/partition/call-gathering.ts). */
  savedOnce<T>(fn: () => T): T {
    this.holding = true;
    try {
      const out = fn();
      if (this.unsaved && this.cached) this.write(this.cached);
      return out;
    } finally {
      this.holding = false;
      this.unsaved = false;
    }
  }

  private write(m: PartitionMeta): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, pending, names, base, hash_key, open) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      m.epoch,
      m.watermark,
      m.rows,
      m.next_expiry,
      m.width,
      m.hashed,
      m.pending,
      m.names,
      m.base,
      m.hash_key,
      m.open === null ? null : blobOf(m.open),
    );
  }

  /** Read again next time (after a rollback, or once storage was deleted). */
  forget(): void {
    this.cached = undefined;
  }
}

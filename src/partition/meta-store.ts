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
    this.sql.exec("DELETE FROM segments; DELETE FROM ledger; DELETE FROM kept_names; DELETE FROM receipts;");
    const fresh = freshMeta(epoch);
    this.save(fresh);
    return { ...fresh };
  }

  save(m: PartitionMeta): void {
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
    this.cached = { ...m };
  }

  /** Read again next time (after a rollback, or once storage was deleted). */
  forget(): void {
    this.cached = undefined;
  }
}

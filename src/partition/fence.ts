/**
 * The fence an online rescale puts on an old partition (DESIGN §12): once
 * its successors' map is in force, this partition judges nothing more, so
 * that a Coordinator (an ingest shard) still routing by the old map is told
 * which map replaced it instead of deciding here, after the decisions here
 * were handed over. The fence names the map that replaced this one: its
 * version and count, which is all a shard needs to finish a switch the
 * rescaling shard began. Reads (peek, handOut, describe) go on.
 */
export interface Fence {
  epoch: string;
  version: number;
  partitions: number;
}

export const FENCE_TABLE =
  "CREATE TABLE IF NOT EXISTS fence (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, version INTEGER NOT NULL, partitions INTEGER NOT NULL)";

/** The fence row, read once and kept (only this object writes it). */
export class FenceStore {
  private cached: Fence | null | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The fence on this epoch's state, if any. */
  of(epoch: string): Fence | null {
    if (this.cached === undefined)
      this.cached = this.sql.exec<{ epoch: string; version: number; partitions: number }>("SELECT epoch, version, partitions FROM fence").toArray()[0] ?? null;
    return this.cached && this.cached.epoch === epoch ? this.cached : null;
  }

  set(fence: Fence): void {
    this.sql.exec("INSERT OR REPLACE INTO fence (id, epoch, version, partitions) VALUES (1, ?, ?, ?)", fence.epoch, fence.version, fence.partitions);
    this.cached = { ...fence };
  }

  forget(): void {
    this.cached = undefined;
  }
}

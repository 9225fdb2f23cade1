import type { PartitionStats } from "../partition";

/** Committed ledgers remembered per partition for dropping at its next call. */
export const MAX_FORGET_PER_PARTITION = 10_000;

/** A partition's figures as it last reported them; nextExpiry absent: not known, so the eviction fan-out visits it. */
export type ReportedPartition = Omit<PartitionStats, "nextExpiry"> & { p: number; nextExpiry?: number | null };

/**
 * The Coordinator's book of its partitions: the figures each last reported
 * (the `partitions` table: state totals for numRowsTotal and /metrics, and the
 * next expiry that picks which partitions the eviction fan-out visits) and
 * the committed ledgers each may drop, carried by the next call to it. The
 * calls themselves, alarms and transactions stay in the Coordinator. One
 * statement per operation: the bench counts them.
 */
export class PartitionBook {
  /** In memory: the partitions' 7-day prune is the backstop for lists lost with the object. */
  private forgetLists = new Map<number, string[]>();

  constructor(private readonly sql: SqlStorage) {}

  /** Records the last figures partitions reported (one statement for all). */
  record(stats: Iterable<ReportedPartition>): void {
    const rows = [...stats].map((s) => [s.p, s.rows, s.bytes, s.watermark, s.nextExpiry === undefined ? 0 : s.nextExpiry]);
    if (rows.length === 0) return;
    this.sql.exec(
      `INSERT OR REPLACE INTO partitions (p, rows, bytes, watermark, next_expiry)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
         json_extract(value, '$[4]') FROM json_each(?)`,
      JSON.stringify(rows),
    );
  }

  /** The state over all partitions, as they last reported it. */
  totals(): { rows: number; bytes: number } {
    return this.sql.exec<{ rows: number; bytes: number }>("SELECT coalesce(sum(rows), 0) AS rows, coalesce(sum(bytes), 0) AS bytes FROM partitions").one();
  }

  /**
   * Partitions with a key due under `watermark` (by the last figures they
   * reported; every apply evicts first anyway, so a stale figure delays
   * clean-up, never a decision).
   */
  due(watermark: number): number[] {
    return this.sql
      .exec<{ p: number }>("SELECT p FROM partitions WHERE next_expiry IS NOT NULL AND next_expiry <= ?", watermark)
      .toArray()
      .map((r) => r.p);
  }

  /** Remembers a committed ledger (`{source}\n{batchId}`) for partition `p` to drop; past the cap it is left to the prune. */
  forgetLater(p: number, ledger: string): void {
    let list = this.forgetLists.get(p);
    if (!list) this.forgetLists.set(p, (list = []));
    if (list.length < MAX_FORGET_PER_PARTITION) list.push(ledger);
  }

  /** Drops every list (the stream was deleted). */
  forgetAll(): void {
    this.forgetLists.clear();
  }

  /** The ledgers partition `p` may drop, handed over once: its next call carries them. */
  takeForget(p: number): string[] {
    const list = this.forgetLists.get(p) ?? [];
    this.forgetLists.delete(p);
    return list;
  }
}

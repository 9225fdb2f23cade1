import type { PendingRow, PendingSummary } from "./store";

/**
 * The rows read from the committed output and not yet delivered, each with
 * its attempts so far and when the next one is due (at most MAX_PENDING of
 * them, ./store.ts).
 */
export class Pending {
  constructor(private readonly sql: SqlStorage) {}

  summary(): PendingSummary {
    return this.sql
      .exec<PendingSummary>("SELECT count(*) AS n, min(seq) AS low, min(committed_at) AS oldest, coalesce(max(attempts > 0), 0) AS failing FROM pending")
      .one();
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pending").one().n;
  }

  /** The rows due at `now`, in order, at most `limit`. */
  due(now: number, limit: number): PendingRow[] {
    return this.sql.exec<PendingRow>("SELECT * FROM pending WHERE next_at <= ? ORDER BY seq, idx LIMIT ?", now, limit).toArray();
  }

  /** When the next row is due, or null when none is pending. */
  nextDueAt(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT min(next_at) AS at FROM pending").one().at;
  }

  /** Rows `first`, `first + 1`, … of commit `seq`, due at `now` (a row already pending stays as it is). */
  insert(seq: number, first: number, rows: string[], committedAt: number, now: number): void {
    this.sql.exec(
      `INSERT OR IGNORE INTO pending (seq, idx, row, committed_at, next_at)
               SELECT ?, ? + key, value, ?, ? FROM json_each(?)`,
      seq,
      first,
      committedAt,
      now,
      JSON.stringify(rows),
    );
  }

  /** The attempts a pending row has had, or undefined when it is not pending. */
  attemptsOf(seq: number, idx: number): number | undefined {
    return this.sql.exec<{ attempts: number }>("SELECT attempts FROM pending WHERE seq = ? AND idx = ?", seq, idx).toArray()[0]?.attempts;
  }

  remove(seq: number, idx: number): void {
    this.sql.exec("DELETE FROM pending WHERE seq = ? AND idx = ?", seq, idx);
  }

  /** A failed attempt: the row's next one is due at `nextAt`. */
  retryAt(seq: number, idx: number, attempts: number, firstAt: number, nextAt: number, error: string): void {
    this.sql.exec(
      "UPDATE pending SET attempts = ?, first_at = ?, next_at = ?, last_error = ? WHERE seq = ? AND idx = ?",
      attempts,
      firstAt,
      nextAt,
      error,
      seq,
      idx,
    );
  }

  /** Forgets the rows from commit `seq` on. */
  dropFrom(seq: number): void {
    this.sql.exec("DELETE FROM pending WHERE seq >= ?", seq);
  }
}

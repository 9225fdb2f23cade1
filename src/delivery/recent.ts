import { parseAttempts, type AttemptRecord } from "./attempts-log";

/** Delivered rows whose attempts are kept (a ring: the oldest slot is written over). */
export const RECENT_ROWS = 1_000;

/**
 * The last RECENT_ROWS delivered rows with their attempts (table `recent`,
 * ./store.ts): one row written per delivery, in slot `delivered % RECENT_ROWS`,
 * so it never needs a delete and stays bounded.
 */
export class RecentDeliveries {
  constructor(private readonly sql: SqlStorage) {}

  put(slot: number, seq: number, idx: number, deliveredAt: number, tries: string): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO recent (slot, seq, idx, delivered_at, tries) VALUES (?, ?, ?, ?, ?)",
      slot % RECENT_ROWS,
      seq,
      idx,
      deliveredAt,
      tries,
    );
  }

  find(seq: number, idx: number): { deliveredAt: number; attempts: AttemptRecord[] } | null {
    const r = this.sql
      .exec<{ delivered_at: number; tries: string }>(
        "SELECT delivered_at, tries FROM recent WHERE seq = ? AND idx = ? ORDER BY delivered_at DESC LIMIT 1",
        seq,
        idx,
      )
      .toArray()[0];
    return r ? { deliveredAt: r.delivered_at, attempts: parseAttempts(r.tries) } : null;
  }

  newest(limit: number): { seq: number; idx: number; deliveredAt: number; attempts: AttemptRecord[] }[] {
    return this.sql
      .exec<{ seq: number; idx: number; delivered_at: number; tries: string }>(
        "SELECT seq, idx, delivered_at, tries FROM recent ORDER BY delivered_at DESC, seq DESC, idx DESC LIMIT ?",
        limit,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, idx: r.idx, deliveredAt: r.delivered_at, attempts: parseAttempts(r.tries) }));
  }

  clear(): void {
    this.sql.exec("DELETE FROM recent");
  }
}

import { restOfShard, SHARD_OF_SEQ } from "./cursors";
import { parseAttempts, type AttemptRecord } from "./attempts-log";
import { webhookId } from "./message";
import type { DeadRow } from "./protocol";
import { MAX_ROW_BYTES } from "./rows";
import { MAX_DEAD, type DestRow, type PendingRow } from "./store";

/** The rows that will not be delivered: out of retryFor, undeliverable, or too large to send (the newest MAX_DEAD, ./store.ts). */
export class DeadLane {
  constructor(private readonly sql: SqlStorage) {}

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dead").one().n;
  }

  /** Up to `limit` dead rows after (seq, index), oldest first, with the ids they were sent under. */
  page(d: Pick<DestRow, "stream" | "incarnation">, after: { seq: number; index: number }, limit: number): DeadRow[] {
    return this.sql
      .exec<PendingRow & { died_at: number }>(
        "SELECT seq, idx, row, committed_at, attempts, last_error, died_at, tries FROM dead WHERE (seq, idx) > (?, ?) ORDER BY seq, idx LIMIT ?",
        after.seq,
        after.index,
        limit,
      )
      .toArray()
      .map((r) => ({
        id: webhookId(d.stream, r.seq, r.idx, d.incarnation),
        seq: r.seq,
        index: r.idx,
        attempts: r.attempts,
        lastError: r.last_error,
        diedAt: r.died_at,
        committedAt: r.committed_at,
        row: r.row,
        history: parseAttempts(r.tries),
      }));
  }

  /** A dead row's attempts and when it died, or null. */
  find(seq: number, idx: number): { diedAt: number; attempts: AttemptRecord[]; lastError: string | null } | null {
    const r = this.sql
      .exec<{ died_at: number; tries: string | null; last_error: string | null }>(
        "SELECT died_at, tries, last_error FROM dead WHERE seq = ? AND idx = ?",
        seq,
        idx,
      )
      .toArray()[0];
    return r ? { diedAt: r.died_at, attempts: parseAttempts(r.tries), lastError: r.last_error } : null;
  }

  /** The newest dead rows' places, attempts and when they died. */
  newest(limit: number): { seq: number; idx: number; diedAt: number; attempts: AttemptRecord[] }[] {
    return this.sql
      .exec<{ seq: number; idx: number; died_at: number; tries: string | null }>(
        "SELECT seq, idx, died_at, tries FROM dead ORDER BY died_at DESC LIMIT ?",
        limit,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, idx: r.idx, diedAt: r.died_at, attempts: parseAttempts(r.tries) }));
  }

  /** Per shard with dead rows, its oldest dead row's commit (a replay of the dead lane starts there). */
  oldestByShard(): number[] {
    return this.sql
      .exec<{ low: number }>(`SELECT min(seq) AS low FROM dead GROUP BY ${SHARD_OF_SEQ} ORDER BY 1`)
      .toArray()
      .map((r) => r.low);
  }

  /** Dead rows of commit `seq` and the later ones of its shard. */
  countFrom(seq: number): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dead WHERE seq >= ? AND seq < ?", ...restOfShard(seq)).one().n;
  }

  /** Forgets the dead rows from commit `seq` on (in its shard). */
  dropFrom(seq: number): void {
    this.sql.exec("DELETE FROM dead WHERE seq >= ? AND seq < ?", ...restOfShard(seq));
  }

  /** A row too large to keep (`length` characters): a stand-in that says so, never attempted. */
  addTooLarge(seq: number, idx: number, length: number, committedAt: number, now: number): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO dead (seq, idx, row, committed_at, attempts, last_error, died_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
      seq,
      idx,
      JSON.stringify({ tooLarge: true, length }),
      committedAt,
      `the row is over ${MAX_ROW_BYTES} bytes, more than destinations send (read it from /output)`,
      now,
    );
  }

  /** A pending row that failed its last attempt. */
  add(r: PendingRow, attempts: number, error: string, now: number, tries: string | null): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO dead (seq, idx, row, committed_at, attempts, last_error, died_at, tries) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      r.seq,
      r.idx,
      r.row,
      r.committed_at,
      attempts,
      error,
      now,
      tries,
    );
  }

  /** Keeps the newest MAX_DEAD. */
  trim(): void {
    this.sql.exec("DELETE FROM dead WHERE (seq, idx) NOT IN (SELECT seq, idx FROM dead ORDER BY seq DESC, idx DESC LIMIT ?)", MAX_DEAD);
  }
}

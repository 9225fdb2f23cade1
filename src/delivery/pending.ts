import { restOfShard, seqsOf, SHARD_OF_SEQ } from "./cursors";
import { placementOf, type Ordering } from "./ordering";
import type { LaneSummary, PendingRow, PendingSummary } from "./store";

/**
 * The rows read from the committed output and not yet delivered, each with
 * its entity and lane hash (./ordering.ts), its attempts so far and when the
 * next one is due (at most MAX_PENDING of them, ./store.ts).
 */
export class Pending {
  constructor(private readonly sql: SqlStorage) {}

  summary(): PendingSummary {
    return this.sql.exec<PendingSummary>("SELECT count(*) AS n, min(committed_at) AS oldest, coalesce(max(attempts > 0), 0) AS failing FROM pending").one();
  }

  /** Each lane's pending rows and oldest commit time (lanes without rows are absent; their lowest seqs: lows()). */
  byLane(lanes: number): LaneSummary[] {
    return this.sql.exec<LaneSummary>("SELECT h % ? AS lane, count(*) AS n, min(committed_at) AS oldest FROM pending GROUP BY 1 ORDER BY 1", lanes).toArray();
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pending").one().n;
  }

  /**
   * The rows due at `now`, in commit order, at most `limit`, each the oldest
   * pending row of its entity: a later row of an entity waits until the
   * earlier one is delivered or dead, whenever that is due. Across shards
   * (`byTime`), commit order is commit time, then commit number: each
   * shard's rows stay in its order, and no shard's backlog holds back another's.
   */
  due(now: number, limit: number, byTime = false): PendingRow[] {
    if (!byTime) {
      return this.sql
        .exec<PendingRow>(
          `SELECT * FROM pending p WHERE next_at <= ?
             AND (entity IS NULL OR NOT EXISTS (SELECT 1 FROM pending q WHERE q.entity = p.entity AND (q.seq, q.idx) < (p.seq, p.idx)))
           ORDER BY seq, idx LIMIT ?`,
          now,
          limit,
        )
        .toArray();
    }
    // Sorted by time: the places alone (not the rows' text), then the rows of the first `limit` (no index to write per row).
    return this.sql
      .exec<PendingRow>(
        `SELECT p.* FROM (SELECT seq, idx, committed_at FROM pending p WHERE next_at <= ?
             AND (entity IS NULL OR NOT EXISTS (SELECT 1 FROM pending q WHERE q.entity = p.entity AND (q.committed_at, q.seq, q.idx) < (p.committed_at, p.seq, p.idx)))
           ORDER BY committed_at, seq, idx LIMIT ?) o JOIN pending p ON p.seq = o.seq AND p.idx = o.idx
         ORDER BY o.committed_at, o.seq, o.idx`,
        now,
        limit,
      )
      .toArray();
  }

  /** When the next row is due, or null when none is pending. */
  nextDueAt(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT min(next_at) AS at FROM pending").one().at;
  }

  /** When the next row that is not yet due comes due, or null. */
  nextDueAfter(now: number): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT min(next_at) AS at FROM pending WHERE next_at > ?", now).one().at;
  }

  /** Rows `first`, `first + 1`, … of commit `seq`, due at `now`, placed under `ordering` (a row already pending stays as it is). */
  insert(seq: number, first: number, rows: string[], ordering: Ordering, committedAt: number, now: number): void {
    const placed = rows.map((text, i) => {
      const { entity, h } = placementOf(ordering === "none" ? null : JSON.parse(text), seq, first + i, ordering);
      return [text, entity, h];
    });
    this.sql.exec(
      `INSERT OR IGNORE INTO pending (seq, idx, row, committed_at, next_at, entity, h)
               SELECT ?, ? + key, value ->> 0, ?, ?, value ->> 1, value ->> 2 FROM json_each(?)`,
      seq,
      first,
      committedAt,
      now,
      JSON.stringify(placed),
    );
  }

  /** The ordering changed: every pending row's entity and lane hash again. */
  replace(ordering: Ordering): void {
    for (const r of this.sql.exec<{ seq: number; idx: number; row: string }>("SELECT seq, idx, row FROM pending").toArray()) {
      const { entity, h } = placementOf(ordering === "none" ? null : JSON.parse(r.row), r.seq, r.idx, ordering);
      this.sql.exec("UPDATE pending SET entity = ?, h = ? WHERE seq = ? AND idx = ?", entity, h, r.seq, r.idx);
    }
  }

  /** The attempts a pending row has had, or undefined when it is not pending. */
  attemptsOf(seq: number, idx: number): number | undefined {
    return this.sql.exec<{ attempts: number }>("SELECT attempts FROM pending WHERE seq = ? AND idx = ?", seq, idx).toArray()[0]?.attempts;
  }

  find(seq: number, idx: number): PendingRow | undefined {
    return this.sql.exec<PendingRow>("SELECT * FROM pending WHERE seq = ? AND idx = ?", seq, idx).toArray()[0];
  }

  /** The pending rows that have failed, the most recently failed first. */
  failing(limit: number): PendingRow[] {
    return this.sql.exec<PendingRow>("SELECT * FROM pending WHERE attempts > 0 ORDER BY next_at DESC LIMIT ?", limit).toArray();
  }

  remove(seq: number, idx: number): void {
    this.sql.exec("DELETE FROM pending WHERE seq = ? AND idx = ?", seq, idx);
  }

  /** A failed attempt: the row's next one is due at `nextAt`. */
  retryAt(seq: number, idx: number, attempts: number, firstAt: number, nextAt: number, error: string, tries: string): void {
    this.sql.exec(
      "UPDATE pending SET attempts = ?, first_at = ?, next_at = ?, last_error = ?, tries = ? WHERE seq = ? AND idx = ?",
      attempts,
      firstAt,
      nextAt,
      error,
      tries,
      seq,
      idx,
    );
  }

  /** Forgets the rows from commit `seq` on (in its shard). */
  dropFrom(seq: number): void {
    this.sql.exec("DELETE FROM pending WHERE seq >= ? AND seq < ?", ...restOfShard(seq));
  }

  /** The latest commit time of shard k's pending rows (null: none): a shard's rows read later are given no earlier one. */
  newestIn(k: number): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT max(committed_at) AS at FROM pending WHERE seq >= ? AND seq < ?", ...seqsOf(k)).one().at;
  }

  /** Per lane and shard, the lowest seq pending (a stream of several shards reports a delivered cursor per lane). */
  lows(lanes: number): { lane: number; k: number; low: number }[] {
    return this.sql
      .exec<{ lane: number; k: number; low: number }>(`SELECT h % ? AS lane, ${SHARD_OF_SEQ} AS k, min(seq) AS low FROM pending GROUP BY 1, 2`, lanes)
      .toArray();
  }
}

import { shardOfSeq } from "../stream/shards";
import { cursorOf, restOfShard, seqsOf, SHARD_OF_SEQ, type ReadCursor } from "./cursors";
import { MAX_MARKS } from "./store";

/**
 * Commit times the Coordinators' pokes reported (each shard's newest
 * MAX_MARKS, ./store.ts): a row's body carries its commit time on every
 * attempt, and a mark past a shard's read cursor says there is more to read.
 * A commit number names its shard (src/stream/shards.ts), so one table holds
 * every shard's marks, each shard's compared only with its own.
 */
export class CommitMarks {
  constructor(private readonly sql: SqlStorage) {}

  /** Commits up to `seq` exist (in its shard), the last committed at `at`. */
  add(seq: number, at: number): void {
    const k = shardOfSeq(seq);
    this.sql.exec("INSERT OR IGNORE INTO marks (seq, at) VALUES (?, ?)", seq, at);
    this.sql.exec(
      "DELETE FROM marks WHERE seq >= ?1 AND seq < ?2 AND seq NOT IN (SELECT seq FROM marks WHERE seq >= ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3)",
      ...seqsOf(k),
      MAX_MARKS,
    );
  }

  /** The commit time reported for `seq` (the first mark of its shard at or after it), or null. */
  timeOf(seq: number): number | null {
    return this.sql.exec<{ at: number }>("SELECT at FROM marks WHERE seq >= ? AND seq < ? ORDER BY seq LIMIT 1", ...restOfShard(seq)).toArray()[0]?.at ?? null;
  }

  /** The shards with a commit reported past their cursor. */
  unread(cursors: readonly ReadCursor[]): number[] {
    return this.sql
      .exec<{ k: number; top: number }>(`SELECT ${SHARD_OF_SEQ} AS k, max(seq) AS top FROM marks GROUP BY 1 ORDER BY 1`)
      .toArray()
      .filter((r) => r.top > cursorOf(cursors, r.k).seq)
      .map((r) => r.k);
  }

  /** Whether any shard has a commit reported past its cursor. */
  anyAfter(cursors: readonly ReadCursor[]): boolean {
    return this.unread(cursors).length > 0;
  }

  /** Forgets shard k's marks up to `seq` (read). */
  dropUpTo(k: number, seq: number): void {
    this.sql.exec("DELETE FROM marks WHERE seq >= ? AND seq <= ?", seqsOf(k)[0], seq);
  }

  clear(): void {
    this.sql.exec("DELETE FROM marks");
  }
}

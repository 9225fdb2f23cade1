import { MAX_MARKS } from "./store";

/**
 * Commit times the Coordinator's pokes reported (the newest MAX_MARKS,
 * ./store.ts): a row's body carries its commit time on every attempt, and a
 * mark past the read cursor says there is more to read.
 */
export class CommitMarks {
  constructor(private readonly sql: SqlStorage) {}

  /** Commits up to `seq` exist, the last committed at `at`. */
  add(seq: number, at: number): void {
    this.sql.exec("INSERT OR IGNORE INTO marks (seq, at) VALUES (?, ?)", seq, at);
    this.sql.exec("DELETE FROM marks WHERE seq NOT IN (SELECT seq FROM marks ORDER BY seq DESC LIMIT ?)", MAX_MARKS);
  }

  /** The commit time reported for `seq` (the first mark at or after it), or null. */
  timeOf(seq: number): number | null {
    return this.sql.exec<{ at: number }>("SELECT at FROM marks WHERE seq >= ? ORDER BY seq LIMIT 1", seq).toArray()[0]?.at ?? null;
  }

  /** Whether a commit after `seq` was reported. */
  anyAfter(seq: number): boolean {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM marks WHERE seq > ?", seq).one().n > 0;
  }

  /** Forgets the marks up to `seq` (read). */
  dropUpTo(seq: number): void {
    this.sql.exec("DELETE FROM marks WHERE seq <= ?", seq);
  }

  clear(): void {
    this.sql.exec("DELETE FROM marks");
  }
}

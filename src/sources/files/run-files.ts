/** A file a run has listed and not settled yet, `n` its place in the run's order. */
export type RunFile = { n: number; key: string; etag: string; size: number };

/** Each run's files still to ingest, in listing order; a file leaves when it is settled (done, skipped or failed). */
export class RunFiles {
  constructor(private readonly sql: SqlStorage) {}

  count(runId: string): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM run_files WHERE run_id = ?", runId).one().n;
  }

  /** The run's next `limit` files. */
  next(runId: string, limit: number): RunFile[] {
    return this.sql.exec<RunFile>("SELECT n, key, etag, size FROM run_files WHERE run_id = ? ORDER BY n LIMIT ?", runId, limit).toArray();
  }

  /** Files listed for the run, after the ones it has. */
  append(runId: string, files: readonly { key: string; etag: string; size: number }[]): void {
    const first = this.sql.exec<{ n: number }>("SELECT coalesce(max(n), 0) AS n FROM run_files WHERE run_id = ?", runId).one().n + 1;
    if (files.length > 0) {
      this.sql.exec(
        "INSERT OR IGNORE INTO run_files (run_id, n, key, etag, size) SELECT ?, ? + key, value ->> 'key', value ->> 'etag', value ->> 'size' FROM json_each(?)",
        runId,
        first,
        JSON.stringify(files),
      );
    }
  }

  /** Takes file `n` off the run's list; false when it was not on it (settled already). */
  settle(runId: string, n: number): boolean {
    return this.sql.exec("DELETE FROM run_files WHERE run_id = ? AND n = ? RETURNING n", runId, n).toArray().length > 0;
  }

  clear(runId: string): void {
    this.sql.exec("DELETE FROM run_files WHERE run_id = ?", runId);
  }
}

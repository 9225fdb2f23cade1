/**
 * Publications (the committed manifest, the Iceberg table: src/output/publisher.ts)
 * that fail are retried with backoff, apart from each other and from the
 * rest of the Coordinator's alarm. No Cloudflare imports: the SQL it needs is
 * the one call below, so Node tests drive it too.
 */
export interface SqlLike {
  exec<T extends Record<string, ArrayBuffer | string | number | null>>(query: string, ...bindings: any[]): { toArray(): T[] };
}

/** A publication that keeps failing: how often in a row, the last error, and when to try again. */
export const PUBLISH_FAILURES_TABLE =
  "CREATE TABLE IF NOT EXISTS publish_failures (what TEXT PRIMARY KEY, failures INTEGER NOT NULL, last_error TEXT NOT NULL, last_error_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL) WITHOUT ROWID;";

export type Publication = "table" | "manifest";

/** After the first failure a publication waits this long, doubling with each failure in a row, up to PUBLISH_RETRY_MAX_MS. */
export const PUBLISH_RETRY_BASE_MS = 2_000;
export const PUBLISH_RETRY_MAX_MS = 5 * 60_000;

export function publishRetryDelay(failures: number): number {
  return Math.min(PUBLISH_RETRY_BASE_MS * 2 ** Math.max(0, failures - 1), PUBLISH_RETRY_MAX_MS);
}

export interface PublishFailure {
  failures: number;
  lastError: string;
  lastErrorAt: number;
  nextAttemptAt: number;
}

/**
 * Keeps a failing publication from taking the rest of the alarm with it: a
 * throw is recorded (persisted, so a restarted Coordinator still backs off
 * and still reports it) instead of escaping, and the publication is skipped
 * until its next attempt is due. Eviction, outbox flushes and the other
 * publication go on; the commits wait in the ledger, so nothing is lost.
 */
export class PublishGuard {
  constructor(private readonly sql: SqlLike) {}

  failure(what: Publication): PublishFailure | null {
    const r = this.sql
      .exec<{ failures: number; last_error: string; last_error_at: number; next_attempt_at: number }>("SELECT * FROM publish_failures WHERE what = ?", what)
      .toArray()[0];
    return r ? { failures: r.failures, lastError: r.last_error, lastErrorAt: r.last_error_at, nextAttemptAt: r.next_attempt_at } : null;
  }

  /** When the earliest publication that is backing off is due again; null when none is failing. */
  nextAttemptAt(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT min(next_attempt_at) AS at FROM publish_failures").toArray()[0]?.at ?? null;
  }

  /** Runs `fn` unless the publication is backing off; its result, or null when skipped or failed (recorded). */
  async attempt<T>(what: Publication, now: number, fn: () => Promise<T>): Promise<T | null> {
    const failed = this.failure(what);
    if (failed && now < failed.nextAttemptAt) return null;
    try {
      const out = await fn();
      if (failed) this.sql.exec("DELETE FROM publish_failures WHERE what = ?", what);
      return out;
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      const failures = (failed?.failures ?? 0) + 1;
      console.error(`publish ${what}: failed ${failures} time(s) in a row: ${message}`);
      this.sql.exec(
        "INSERT OR REPLACE INTO publish_failures (what, failures, last_error, last_error_at, next_attempt_at) VALUES (?, ?, ?, ?, ?)",
        what,
        failures,
        message.slice(0, 1_000),
        now,
        now + publishRetryDelay(failures),
      );
      return null;
    }
  }
}

/** What GET …/table reports of the table's publication. */
export interface TablePublishing {
  /** the last commit sequence in the table, and the last committed */
  publishedSeq: number;
  committedSeq: number;
  failing: boolean;
  /** failures in a row; the last one's error and time; when the next attempt is due (null: not failing) */
  failures: number;
  lastError: string | null;
  lastErrorAt: number | null;
  nextAttemptAt: number | null;
}

export function tablePublishingOf(publishedSeq: number, committedSeq: number, failure: PublishFailure | null): TablePublishing {
  return {
    publishedSeq,
    committedSeq,
    failing: failure !== null,
    failures: failure?.failures ?? 0,
    lastError: failure?.lastError ?? null,
    lastErrorAt: failure?.lastErrorAt ?? null,
    nextAttemptAt: failure?.nextAttemptAt ?? null,
  };
}

/**
 * When to try a batch again and how long to wait first. Pure: the clock and
 * the random source are parameters, so the bounds can be tested exactly.
 */

/** The longest wait a `Retry-After` can ask for before we stop honouring it to the letter. */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

export interface Backoff {
  /** the first retry waits between base/2 and base */
  baseMs: number;
  /** no wait is longer than this (before a Retry-After) */
  capMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 250, capMs: 30_000 };

/**
 * `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, as ms from
 * `now`; null when absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value === null || value === undefined) return null;
  const v = value.trim();
  if (v === "") return null;
  if (/^\d+$/.test(v)) return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  // An HTTP-date always names a weekday and a month ("Sun, 06 Nov 1994 08:49:37 GMT" and the two obsolete forms).
  if (!/[a-z]{3}/i.test(v)) return null;
  const when = Date.parse(v);
  if (Number.isNaN(when)) return null;
  return Math.min(Math.max(0, when - now), MAX_RETRY_AFTER_MS);
}

/**
 * Exponential backoff with "equal jitter": before retry `attempt` (1 = the
 * first retry) the wait is in [e/2, e] with e = min(cap, base·2^(attempt−1)).
 * `random` is in [0, 1).
 */
export function backoffDelay(attempt: number, random: number, backoff: Backoff = DEFAULT_BACKOFF): number {
  const exp = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + random * (exp / 2));
}

/** The wait before retry `attempt`: the backoff, but never sooner than the server's `Retry-After`. */
export function retryDelay(attempt: number, retryAfterMs: number | null, random: number, backoff: Backoff = DEFAULT_BACKOFF): number {
  const wait = backoffDelay(attempt, random, backoff);
  return retryAfterMs === null ? wait : Math.max(wait, retryAfterMs);
}

/**
 * Whether an HTTP answer to an ingest is worth repeating with the same bytes
 * and id: 5xx, 408, 429, and 409 `batch-in-flight` (another request is still
 * running that batch). Every other 4xx is final.
 */
export function isRetryableStatus(status: number, problemType: string | undefined): boolean {
  if (status >= 500 || status === 408 || status === 429) return true;
  return status === 409 && (problemType ?? "").endsWith("/batch-in-flight");
}

/** Answers that would be the same for every batch of the run (credential, stream): stop sending. */
export function isFatalStatus(status: number): boolean {
  return status === 401 || status === 403 || status === 404;
}

/**
 * When a failed delivery is tried again: exponential backoff with jitter,
 * never sooner than the receiver's Retry-After, and not beyond the row's
 * retryFor (then it goes to the dead lane). Pure: the sender passes the
 * clock and the random number.
 */

/** The first retry comes about this long after the first failure, */
export const BASE_DELAY_MS = 1_000;
/** and no retry waits longer than this (Svix and Stripe cap near an hour too). */
export const MAX_DELAY_MS = 60 * 60 * 1000;
/** A Retry-After beyond this is capped: a receiver can't park a row for days in one answer. */
export const MAX_RETRY_AFTER_MS = 6 * 60 * 60 * 1000;

/**
 * The wait after the `failures`-th failure (1-based): base·2^(failures-1),
 * capped, with "equal jitter" (half fixed, half random) so that rows failing
 * together spread out but a retry never comes absurdly early.
 */
export function backoffDelay(failures: number, random: number, base = BASE_DELAY_MS, cap = MAX_DELAY_MS): number {
  const exp = Math.min(cap, base * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(exp / 2 + (exp / 2) * Math.min(Math.max(random, 0), 1));
}

/**
 * Retry-After as milliseconds from `now`: delta-seconds or an HTTP date
 * (RFC 9110 §10.2.3). Null when absent or unreadable; capped at MAX_RETRY_AFTER_MS.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value == null) return null;
  const text = value.trim();
  if (text === "") return null;
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at) || !/[a-z]/i.test(text)) return null;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/**
 * The next attempt of a row that just failed, or "dead" when its retryFor
 * (counted from its first attempt) has run out or would before that attempt.
 */
export function nextAttempt(
  row: { failures: number; firstAttemptAt: number },
  retryAfterMs: number | null,
  policy: { retryForMs: number },
  now: number,
  random: number,
): { at: number } | "dead" {
  const wait = Math.max(backoffDelay(row.failures, random), retryAfterMs ?? 0);
  const at = now + wait;
  if (now - row.firstAttemptAt >= policy.retryForMs || at > row.firstAttemptAt + policy.retryForMs) {
    // One last try at the deadline itself beats giving up early, when there is time left.
    const deadline = row.firstAttemptAt + policy.retryForMs;
    return deadline > now && retryAfterMs === null ? { at: deadline } : "dead";
  }
  return { at };
}

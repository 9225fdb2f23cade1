import { nextAttempt, parseRetryAfter } from "./schedule";

/**
 * What one attempt's answer means. 2xx: delivered. 410 Gone: the receiver
 * says the endpoint is gone, so the destination pauses (as Svix and Stripe
 * disable such endpoints) rather than retry for days. Anything else, a
 * connection error or the timeout: retried, no sooner than its Retry-After.
 */
export type Answer = { status: number; retryAfter: string | null } | { error: string };
export type Verdict =
  | { kind: "delivered" }
  | { kind: "gone"; error: string }
  | { kind: "retry"; error: string; retryAfterMs: number | null }
  /** no attempt can succeed (a row too large for a queue message): straight to the dead lane */
  | { kind: "undeliverable"; error: string };

export function judge(answer: Answer, now: number): Verdict {
  if ("error" in answer) return { kind: "retry", error: answer.error, retryAfterMs: null };
  if (answer.status >= 200 && answer.status < 300) return { kind: "delivered" };
  if (answer.status === 410)
    return { kind: "gone", error: "410 Gone: the receiver says this endpoint is gone; the destination is paused (PUT it again to resume)" };
  return { kind: "retry", error: `HTTP ${answer.status}`, retryAfterMs: parseRetryAfter(answer.retryAfter, now) };
}

/**
 * Where a row goes after a failed attempt (its `failures`th): a gone endpoint
 * leaves it due at once (sent when the destination resumes), an undeliverable
 * one goes to the dead lane, the others wait for their next attempt.
 */
export function afterFailure(
  verdict: Exclude<Verdict, { kind: "delivered" }>,
  row: { failures: number; firstAttemptAt: number },
  policy: { retryForMs: number },
  now: number,
  random: () => number,
): { at: number } | "dead" {
  if (verdict.kind === "gone") return { at: now };
  if (verdict.kind === "undeliverable") return "dead";
  return nextAttempt(row, verdict.retryAfterMs, policy, now, random());
}

/** How an attempt that threw is described (a timeout says so). */
export function describeError(e: unknown, timeoutMs: number): string {
  const err = e as { name?: string; message?: string };
  if (err?.name === "TimeoutError" || err?.name === "AbortError") return `timed out after ${timeoutMs} ms`;
  return `connection failed: ${err?.message ?? String(e)}`;
}

/**
 * deliveredSeq: every row of every commit up to it is delivered or in the
 * dead lane. It is one less than the lowest seq still pending, or how far the
 * sender has read when nothing is pending.
 */
export function deliveredSeq(lowestPendingSeq: number | null, readSeq: number): number {
  return lowestPendingSeq === null ? readSeq : Math.min(readSeq, lowestPendingSeq - 1);
}

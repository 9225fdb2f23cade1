/**
 * Sends one batch until it is committed or there is no point: the same bytes
 * and the same Idempotency-Key on every attempt, so a retry can never add
 * output twice (the service replays a committed batch id).
 */
import type { Batch } from "./chunk.ts";
import { DEFAULT_BACKOFF, isFatalStatus, isRetryableStatus, parseRetryAfter, retryDelay, type Backoff } from "./retry.ts";

export interface Target {
  /** the service's base URL, e.g. http://127.0.0.1:8787 */
  url: string;
  stream: string;
  source?: string;
  token: string;
}

export interface RetryPolicy {
  /** attempts per batch, the first included */
  maxAttempts: number;
  backoff: Backoff;
  /** per attempt */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 8, backoff: DEFAULT_BACKOFF, timeoutMs: 60_000 };

/** What the service says of a batch (README, Ingest), reduced to what the summary counts. */
export interface Outcome {
  replayed: boolean;
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
}

export type SendResult =
  | { ok: true; outcome: Outcome; attempts: number }
  | {
      ok: false;
      error: string;
      attempts: number;
      /** the answer would be the same for every batch of this run (bad token, no such stream) */
      fatal: boolean;
    };

export interface SendDeps {
  fetch: typeof fetch;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  now: () => number;
  /** told before each retry (for progress output) */
  onRetry?: (batch: Batch, attempt: number, reason: string, delayMs: number) => void;
}

export const realDeps = (): SendDeps => ({
  fetch: globalThis.fetch,
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  random: Math.random,
  now: Date.now,
});

export function eventsUrl(target: Target): string {
  return `${target.url.replace(/\/+$/, "")}/v1/streams/${encodeURIComponent(target.stream)}/events`;
}

interface Problem {
  type?: string;
  title?: string;
  detail?: string;
}

/** The problem+json body, or null when the body is not JSON (a proxy's HTML page, say). */
function readProblem(text: string): Problem | null {
  try {
    const p = JSON.parse(text);
    return p !== null && typeof p === "object" ? (p as Problem) : {};
  } catch {
    return null;
  }
}

function describe(status: number, text: string, problem: Problem | null): string {
  const p = problem ?? {};
  const what = p.detail ?? p.title ?? (problem === null ? text.slice(0, 200).replace(/\s+/g, " ").trim() : "");
  const slug = p.type ? ` ${p.type.slice(p.type.lastIndexOf("/") + 1)}` : "";
  return `HTTP ${status}${slug}${what ? `: ${what}` : ""}`;
}

function toOutcome(body: unknown): Outcome | null {
  if (body === null || typeof body !== "object") return null;
  const b = body as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  const [input, emitted, duplicates, late] = [n(b.input), n(b.emitted), n(b.duplicates), n(b.late)];
  if (input === null || emitted === null || duplicates === null || late === null) return null;
  const rejected = n(b.rejectedCount) ?? (Array.isArray(b.rejected) ? b.rejected.length : 0);
  return { replayed: b.replayed === true, input, emitted, duplicates, late, rejected };
}

export async function sendBatch(batch: Batch, target: Target, policy: RetryPolicy, deps: SendDeps): Promise<SendResult> {
  const headers: Record<string, string> = {
    "content-type": "application/x-ndjson",
    "idempotency-key": batch.id,
    authorization: `Bearer ${target.token}`,
  };
  if (target.source !== undefined) headers["x-source"] = target.source;
  const url = eventsUrl(target);
  let lastError = "";
  for (let attempt = 1; ; attempt++) {
    let retryAfter: number | null = null;
    try {
      const res = await deps.fetch(url, { method: "POST", headers, body: batch.body, signal: AbortSignal.timeout(policy.timeoutMs) });
      const text = await res.text();
      if (res.status === 200) {
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          // judged below
        }
        const outcome = toOutcome(body);
        if (outcome) return { ok: true, outcome, attempts: attempt };
        return { ok: false, error: `HTTP 200 with an unreadable body: ${text.slice(0, 200)}`, attempts: attempt, fatal: false };
      }
      const problem = readProblem(text);
      lastError = describe(res.status, text, problem);
      if (!isRetryableStatus(res.status, problem?.type)) {
        return { ok: false, error: lastError, attempts: attempt, fatal: isFatalStatus(res.status) };
      }
      retryAfter = parseRetryAfter(res.headers.get("retry-after"), deps.now());
    } catch (e) {
      const err = e as Error & { cause?: { code?: string; message?: string } };
      lastError = err.name === "TimeoutError" ? `no answer within ${policy.timeoutMs} ms` : `network error: ${err.cause?.code ?? err.cause?.message ?? err.message}`;
    }
    if (attempt >= policy.maxAttempts) {
      return { ok: false, error: `gave up after ${attempt} attempts; last: ${lastError}`, attempts: attempt, fatal: false };
    }
    const delay = retryDelay(attempt, retryAfter, deps.random(), policy.backoff);
    deps.onRetry?.(batch, attempt, lastError, delay);
    await deps.sleep(delay);
  }
}

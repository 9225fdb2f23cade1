/**
 * Sends one batch until it is committed or there is no point: the same bytes
 * and the same Idempotency-Key on every attempt, so a retry can never add
 * output twice (the service replays a committed batch id). The request itself
 * is the typed client's (src/client); what to retry is decided here.
 */
import { createClient, ProblemError, ResponseError } from "../client/index.ts";
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
      /** the HTTP status of the last answer (absent: no answer, e.g. a network error) */
      status?: number;
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
  const client = createClient({ baseUrl: target.url, token: target.token, fetch: deps.fetch });
  let lastError = "";
  for (let attempt = 1; ; attempt++) {
    let retryAfter: number | null = null;
    try {
      const body = await client.ingest(target.stream, {
        body: batch.body,
        contentType: "application/x-ndjson",
        batchId: batch.id,
        source: target.source,
        signal: AbortSignal.timeout(policy.timeoutMs),
      });
      const outcome = toOutcome(body);
      if (outcome) return { ok: true, outcome, attempts: attempt };
      return { ok: false, error: `HTTP 200 with an unreadable body: ${JSON.stringify(body).slice(0, 200)}`, attempts: attempt, fatal: false };
    } catch (e) {
      if (e instanceof ProblemError) {
        lastError = e.message;
        if (!isRetryableStatus(e.status, e.problem?.type)) {
          return { ok: false, error: lastError, attempts: attempt, fatal: isFatalStatus(e.status), status: e.status };
        }
        retryAfter = parseRetryAfter(e.headers.get("retry-after"), deps.now());
      } else if (e instanceof ResponseError) {
        return { ok: false, error: `HTTP ${e.status} with an unreadable body: ${e.text.slice(0, 200)}`, attempts: attempt, fatal: false };
      } else {
        const err = e as Error & { cause?: { code?: string; message?: string } };
        lastError =
          err.name === "TimeoutError" ? `no answer within ${policy.timeoutMs} ms` : `network error: ${err.cause?.code ?? err.cause?.message ?? err.message}`;
      }
    }
    if (attempt >= policy.maxAttempts) {
      return { ok: false, error: `gave up after ${attempt} attempts; last: ${lastError}`, attempts: attempt, fatal: false };
    }
    const delay = retryDelay(attempt, retryAfter, deps.random(), policy.backoff);
    deps.onRetry?.(batch, attempt, lastError, delay);
    await deps.sleep(delay);
  }
}

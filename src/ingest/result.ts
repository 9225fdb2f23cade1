import type { BatchOutcome } from "../stream/batch-outcome";

/**
 * What an ingest came to, whatever the transport: the one contract between
 * submit (./submit.ts) and its adapters. Each adapter maps it with one
 * `switch` ending in `exhaustive(r)`, so a kind added here fails to compile
 * until every adapter says what it means for its callers:
 * - HTTP: src/api/ingest.ts httpOutcome (problem+json),
 * - webhooks: src/api/webhook.ts webhookOutcome (the single 401),
 * - files: src/sources/files/plan.ts fileVerdict (file / run / transient),
 * - queues: src/sources/queue/messages.ts queueVerdict (ack / retry / dead-letter),
 * - Workers RPC: src/rpc/entrypoint.ts rpcOutcome.
 * `detail` is in the product's words and never quotes row bytes.
 */
export type SubmitResult =
  | { kind: "committed"; outcome: BatchOutcome }
  | { kind: "replayed"; outcome: BatchOutcome }
  /** the stream does not exist */
  | { kind: "missing"; detail: string }
  /** the token is not valid for the stream */
  | { kind: "unauthorized"; detail: string }
  /** the caller may not write (a source disabled, a credential revoked); detail: the Coordinator's */
  | { kind: "forbidden"; detail: string }
  /** over the stream's limits; detail: the Coordinator's */
  | { kind: "too-large"; detail: string }
  /** the batch id was used with other bytes */
  | { kind: "conflict"; detail: string }
  /** the batch id is in flight elsewhere: may pass */
  | { kind: "busy"; detail: string; retryAfterMs: number }
  /** the rows or the identity are not acceptable as given (before the Coordinator) */
  | { kind: "invalid"; detail: string }
  /** the micro-batch the batch joined failed: safe to retry; `retryAfterMs`: not run, as the stream's shards are changing (a 503) */
  | { kind: "failed"; detail: string; retryAfterMs?: number };

export type ResultKind = SubmitResult["kind"];
export type Refusal = Exclude<SubmitResult, { kind: "committed" | "replayed" }>;

/** The `default:` of an adapter's switch: compiles only while every kind has its case. */
export function exhaustive(x: never): never {
  throw new Error(`unhandled ingest result ${JSON.stringify(x)}`);
}

/**
 * What the Coordinator may answer for one batch: its IngestResult, a failed
 * micro-batch (ingestMany), or an Admission refusal. Spelled out rather than
 * imported so that this module stays free of the Durable Object's; a kind the
 * Coordinator adds is not assignable here and fails to compile at the call.
 */
export type CoordinatorAnswer =
  | { kind: "done"; outcome: BatchOutcome }
  | { kind: "replay"; source: string; outcome: BatchOutcome }
  | { kind: "missing" | "unauthorized" | "conflict" }
  | { kind: "forbidden" | "too-large"; detail: string }
  | { kind: "busy"; retryAfterMs: number; source?: string }
  | { kind: "failed"; message: string; retryAfterMs?: number };

/**
 * A Coordinator answer as a result, with the texts every transport shows:
 * `batchId` and `source` (as the caller named it; null: "default") say whose
 * batch a conflict or a busy answer is about.
 */
export function resultOf(r: CoordinatorAnswer, stream: string, batchId: string, sourceHeader: string | null): SubmitResult {
  const source = "source" in r && r.source !== undefined ? r.source : (sourceHeader ?? "default");
  switch (r.kind) {
    case "done":
      return { kind: "committed", outcome: r.outcome };
    case "replay":
      return { kind: "replayed", outcome: r.outcome };
    case "missing":
      return { kind: "missing", detail: `stream "${stream}" does not exist; create it with PUT /v1/streams/${stream}` };
    case "unauthorized":
      return { kind: "unauthorized", detail: "the token is not valid for this stream" };
    case "forbidden":
      return { kind: "forbidden", detail: r.detail };
    case "too-large":
      return { kind: "too-large", detail: r.detail };
    case "conflict":
      return { kind: "conflict", detail: `batch id "${batchId}" from source "${source}" was already used with a different body` };
    case "busy":
      return { kind: "busy", detail: `batch id "${batchId}" is being processed by another request; retry later`, retryAfterMs: r.retryAfterMs };
    case "failed":
      return { kind: "failed", detail: r.message, ...(r.retryAfterMs !== undefined ? { retryAfterMs: r.retryAfterMs } : {}) };
    default:
      return exhaustive(r);
  }
}

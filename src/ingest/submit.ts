import { BATCH_ID_PATTERN, foreignBatchId } from "../sources/ids";
import { tooDeep, valueDeeperThan } from "../stream/json";
import { coordinatorStub, type Env } from "../env";
import { WAIT_FOR_INFLIGHT_MS, type IngestResult, type ReceivedBatch } from "../coordinator/protocol";
import { armFault, batchFaultKey, takeFault, type FaultPoint } from "../faults";
import type { BatchOutcome } from "../stream/report";

/**
 * Ingest, whatever the transport: a received batch (rows plus identity:
 * stream, source, batch id, body hash) runs exactly once in the stream's
 * Coordinator, and the answer is a typed result. HTTP maps a refusal to its
 * problem+json (src/api/ingest.ts); Workers RPC (src/rpc) throws it.
 */
export type Refusal =
  | { ok: false; kind: "missing"; status: 404; detail: string }
  | { ok: false; kind: "unauthorized" | "forbidden"; status: 403; detail: string }
  | { ok: false; kind: "too-large"; status: 413; detail: string }
  | { ok: false; kind: "conflict"; status: 422; detail: string }
  | { ok: false; kind: "busy"; status: 409; detail: string; retryAfterMs: number }
  | { ok: false; kind: "invalid"; status: 400; detail: string };
export type SubmitResult = { ok: true; outcome: BatchOutcome } | Refusal;

const POLL_MS = 100;

export async function submitBatch(env: Env, stream: string, received: ReceivedBatch, fault: FaultPoint | null = null): Promise<SubmitResult> {
  const { sourceHeader, batchId } = received;
  const coordinator = coordinatorStub(env, stream);
  // One call per request: coalescing happens in the Coordinator (a Worker can't share a
  // pending call between requests: each request's I/O belongs to that request).
  // Tests only: the crash point is armed for this call (each attempt of it) and disarmed after.
  const faultKey = batchFaultKey(stream, batchId);
  const r = await ingestOrWait(() => (armFault(faultKey, fault), coordinator.ingest(received))).finally(() => takeFault(faultKey));
  const source = "source" in r ? r.source : sourceHeader ?? "default";
  switch (r.kind) {
    case "done":
    case "replay":
      return { ok: true, outcome: r.outcome };
    case "missing":
      return { ok: false, kind: "missing", status: 404, detail: `stream "${stream}" does not exist; create it with PUT /v1/streams/${stream}` };
    case "unauthorized":
      return { ok: false, kind: "unauthorized", status: 403, detail: "the token is not valid for this stream" };
    case "forbidden":
      return { ok: false, kind: "forbidden", status: 403, detail: r.detail };
    case "too-large":
      return { ok: false, kind: "too-large", status: 413, detail: r.detail };
    case "conflict":
      return { ok: false, kind: "conflict", status: 422, detail: `batch id "${batchId}" from source "${source}" was already used with a different body` };
    case "busy":
      return { ok: false, kind: "busy", status: 409, detail: `batch id "${batchId}" is being processed by another request; retry later`, retryAfterMs: r.retryAfterMs };
  }
}

/**
 * A request for a batch id that is in flight waits for it, up to
 * WAIT_FOR_INFLIGHT_MS: the Coordinator waits for a run of its own; this polls
 * only for an id held outside it (a begin() through the direct RPC form).
 */
async function ingestOrWait(ingest: () => Promise<IngestResult>): Promise<IngestResult> {
  const deadline = Date.now() + WAIT_FOR_INFLIGHT_MS;
  for (;;) {
    const r = await ingest();
    if (r.kind !== "busy" || Date.now() + POLL_MS > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}


/**
 * A batch handed over as rows (Workers RPC): the same checks as the HTTP
 * headers and body get, and the identity the HTTP call has when its body is
 * `JSON.stringify(rows)`, so the same batch sent both ways is one batch.
 */
export async function receivedFromRows(
  rows: unknown,
  identity: { source?: string | null; batchId?: string | null },
  limits: { nameOk: (s: string) => boolean; maxRows: number },
): Promise<ReceivedBatch | Refusal> {
  const invalid = (detail: string): Refusal => ({ ok: false, kind: "invalid", status: 400, detail });
  const source = identity.source ?? null;
  if (source !== null && !limits.nameOk(source)) return invalid("source must be 1-64 characters: letters, digits, '_', '.', '-'");
  const batchId = identity.batchId ?? crypto.randomUUID();
  if (!BATCH_ID_PATTERN.test(batchId)) return invalid("batchId must be 1-255 visible ASCII characters");
  // A caller over RPC is a producer like an HTTP one: the other ingresses' batch-id namespaces are not its to use.
  const foreign = foreignBatchId(batchId, "http");
  if (foreign !== null) return invalid(`batchId: ${foreign}`);
  if (valueDeeperThan(rows)) return invalid(`rows: ${tooDeep()}`);
  const list = Array.isArray(rows) ? rows : rows !== null && typeof rows === "object" ? [rows] : null;
  if (list === null) return invalid("rows must be an object or an array of objects");
  if (list.length > limits.maxRows) return invalid(`at most ${limits.maxRows} rows per batch`);
  const bytes = new TextEncoder().encode(JSON.stringify(rows));
  const hash = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
  return { sourceHeader: source, batchId, auth: { kind: "admin" }, rows: list, identity: hash, bytes: bytes.byteLength };
}

import { NAME_RULE } from "../stream/name-rule";
import { BATCH_ID_PATTERN, foreignBatchId } from "./batch-id-namespaces";
import { valueShapeFault } from "../lib/json";
import { batchIdentity } from "../stream/batch-identity";
import type { Env } from "../env";
import { ShardRouter } from "./shard-router";
import { WAIT_FOR_INFLIGHT_MS, type FailedRun, type IngestResult, type ReceivedBatch } from "../coordinator/protocol";
import { resultOf, type Refusal, type SubmitResult } from "./result";

const POLL_MS = 100;

/**
 * Ingest, whatever the transport: a received batch (rows plus identity:
 * stream, source, batch id, body hash) runs exactly once in the stream's
 * Coordinator, and the answer is a typed result (./result.ts) that each
 * adapter maps with its own exhaustive switch. A transport failure (the
 * Coordinator unreachable, its micro-batch failed) is thrown, as before.
 */
export async function submitBatch(
  env: Env,
  stream: string,
  received: ReceivedBatch,
  /** the caller's router to the stream's shards, if it has one (each stub made costs a lookup) */
  router: ShardRouter = new ShardRouter(env, stream),
): Promise<SubmitResult> {
  // One call per request: coalescing happens in the Coordinator (a Worker can't share a
  // pending call between requests: each request's I/O belongs to that request).
  // ingestMany, not ingest: it answers a failed micro-batch as a value, where a throwing RPC method is logged as uncaught per request.
  const r = await ingestOrWait(async () => (await router.ingestMany([received]))[0]);
  return resultOf(r, stream, received.batchId, received.sourceHeader);
}

/**
 * A request for a batch id that is in flight waits for it, up to
 * WAIT_FOR_INFLIGHT_MS: the Coordinator waits for the run itself; this polls
 * only for a busy answer it did not wait on (an id leased by another copy in
 * the same ingestMany call).
 */
async function ingestOrWait(ingest: () => Promise<IngestResult | FailedRun>): Promise<IngestResult | FailedRun> {
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
  const invalid = (detail: string): Refusal => ({ kind: "invalid", detail });
  const source = identity.source ?? null;
  if (source !== null && !limits.nameOk(source)) return invalid(`source must be a source name: ${NAME_RULE}`);
  const batchId = identity.batchId ?? crypto.randomUUID();
  if (!BATCH_ID_PATTERN.test(batchId)) return invalid("batchId must be 1-255 visible ASCII characters");
  // A caller over RPC is a producer like an HTTP one: the other ingresses' batch-id namespaces are not its to use.
  const foreign = foreignBatchId(batchId, "http");
  if (foreign !== null) return invalid(`batchId: ${foreign}`);
  // Before anything walks the rows (JSON.stringify below): a structured clone may share or cycle objects.
  const shape = valueShapeFault(rows);
  if (shape !== null) return invalid(`rows: ${shape}`);
  const list = Array.isArray(rows) ? rows : rows !== null && typeof rows === "object" ? [rows] : null;
  if (list === null) return invalid("rows must be an object or an array of objects");
  if (list.length > limits.maxRows) return invalid(`at most ${limits.maxRows} rows per batch`);
  const bytes = new TextEncoder().encode(JSON.stringify(rows));
  return { sourceHeader: source, batchId, auth: { kind: "admin" }, rows: list, identity: await batchIdentity(bytes, "json"), bytes: bytes.byteLength };
}

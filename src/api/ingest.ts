import { NAME_PATTERN, NAME_RULE } from "../stream/name-rule";
import type { BatchOutcome } from "../stream/batch-outcome";
import { coordinatorStub, type Env } from "../env";
import type { ReceivedBatch } from "../coordinator/protocol";
import { submitBatch } from "../ingest/submit";
import { ShardRouter } from "../ingest/shard-router";
import { exhaustive, type SubmitResult } from "../ingest/result";
import { batchFaultKey, requestedFault, withFault } from "../instrument/faults";
import { BATCH_ID_PATTERN, foreignBatchId } from "../ingest/batch-id-namespaces";
import { admitCaller, proveCaller, signatureRefused } from "./admission";
import { HARD_BODY_LIMIT, HARD_MAX_ROWS, parseMode, parseRows, readBody, TooManyRows } from "../http/body";
import { batchIdentity } from "../stream/batch-identity";
import { badRequest, conflict, forbidden, HttpError, notFound, shardsChanging } from "../http/problem";

/**
 * POST /v1/streams/{stream}/events: admit the caller from its headers, read
 * and parse the body within the stream's limits, prove the caller (a
 * signature covers the body), then processBatch().
 */
export async function ingest(env: Env, stream: string, req: Request): Promise<{ outcome: BatchOutcome; batchId: string; headers: Record<string, string> }> {
  const sourceHeader = req.headers.get("x-source");
  if (sourceHeader !== null && !NAME_PATTERN.test(sourceHeader)) {
    throw badRequest(`X-Source must be a source name: ${NAME_RULE}`);
  }
  const keyHeader = req.headers.get("idempotency-key");
  const batchId = keyHeader ?? crypto.randomUUID();
  if (!BATCH_ID_PATTERN.test(batchId)) throw badRequest("Idempotency-Key must be 1-255 visible ASCII characters");
  const foreign = foreignBatchId(batchId, "http");
  if (foreign !== null) throw badRequest(`Idempotency-Key: ${foreign}`);
  const coordinator = coordinatorStub(env, stream);

  // Who calls and what this stream accepts, from the headers alone: nothing of
  // the body is read for a caller who is not allowed in.
  const caller = await admitCaller(env, stream, coordinator, req.headers, sourceHeader);
  const contentType = req.headers.get("content-type");
  if (caller.signature && caller.signature.v2.length > 0 && keyHeader === null) {
    throw badRequest("a v2 X-Signature covers the Idempotency-Key: send one");
  }
  // A batch that began under higher limits (they were lowered since) still replays.
  let known: Promise<boolean> | undefined;
  const router = new ShardRouter(env, stream, coordinator); // the admission told it the stream's shards
  const beganBefore = () => (known ??= router.knownBatch(caller.source, batchId));
  const bytes = await readBody(req, caller.limits.maxBodyBytes, async () => ((await beganBefore()) ? HARD_BODY_LIMIT : null));
  const { auth, version } = await proveCaller(env, stream, coordinator, caller, sourceHeader, bytes, {
    stream,
    source: caller.source,
    batchId,
    contentType,
  });
  let rows: unknown[];
  try {
    rows = parseRows(bytes, contentType, caller.limits.maxRows);
  } catch (e) {
    if (!(e instanceof TooManyRows) || !(await beganBefore())) throw e;
    rows = parseRows(bytes, contentType, HARD_MAX_ROWS);
  }
  const batch = { sourceHeader, batchId, auth, rows, identity: await batchIdentity(bytes, parseMode(contentType)), bytes: bytes.byteLength };
  // Test builds only: the request's crash point is armed in the fault plan for as long as its call lasts.
  const outcome = await withFault(batchFaultKey(stream, batchId), requestedFault(req.headers), () => processBatch(env, stream, batch, router));
  const headers: Record<string, string> =
    version === "v1" ? { deprecation: "true", warning: '299 edge-dedup "X-Signature v1 is deprecated: sign with v2"' } : {};
  return { outcome, batchId, headers };
}

/**
 * Runs a received batch exactly once, in the stream's Coordinator: it joins
 * the next micro-batch (begin, one call per touched partition, output and
 * marker to R2, commit). Every step is idempotent per batch id, so a retry
 * after a failure anywhere re-runs to the same result (httpOutcome: a signed
 * caller whose credential the Coordinator's admission no longer accepts, revoked or its source
 * disabled since the admission was cached, gets the 401 of a bad signature).
 */
export async function processBatch(env: Env, stream: string, received: ReceivedBatch, router?: ShardRouter): Promise<BatchOutcome> {
  return httpOutcome(await submitBatch(env, stream, received, router), received);
}

/**
 * The HTTP adapter's mapper: the outcome, or the problem+json it throws. A
 * signed (hmac) caller refused by the Coordinator's admission gets the same 401 as a bad
 * signature (`refused`), not a 403 that would say the credential exists.
 */
export function httpOutcome(
  r: SubmitResult,
  caller: Pick<ReceivedBatch, "auth" | "sourceHeader">,
  refused: (source: string) => HttpError = signatureRefused,
): BatchOutcome {
  switch (r.kind) {
    case "committed":
    case "replayed":
      return r.outcome;
    case "missing":
      throw notFound(r.detail);
    case "unauthorized":
    case "forbidden":
      throw caller.auth.kind === "hmac" ? refused(caller.sourceHeader ?? "default") : forbidden(r.detail);
    case "too-large":
      throw new HttpError(413, "batch-too-large", "Payload too large", r.detail);
    case "conflict":
      throw new HttpError(422, "idempotency-key-reused", "Idempotency key reused", r.detail);
    case "busy":
      throw conflict("batch-in-flight", r.detail, {}, { "retry-after": String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) });
    case "invalid":
      throw badRequest(r.detail);
    case "failed":
      // Not run while the shards change: a 503 that says when to come back.
      if (r.retryAfterMs !== undefined) throw shardsChanging(r.detail, r.retryAfterMs);
      // A failed micro-batch is safe to retry: the 500 any unexpected error gets.
      throw new Error(r.detail);
    default:
      return exhaustive(r);
  }
}

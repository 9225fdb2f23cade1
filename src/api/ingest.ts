import { dedupSettings, encodeLate, encodeOutput, encodeRejected, mergeDecisions, planBatch } from "../stream/batch";
import { NAME_PATTERN } from "../stream/config";
import type { BatchOutcome } from "../stream/report";
import { coordinatorStub, partitionStub, type Env } from "../env";
import type { BeginResult, TouchedPartition } from "../coordinator";
import { failAt, requestedFault } from "../faults";
import { writeBatch } from "../sink";
import { HARD_BODY_LIMIT, parseRows, readBody, sha256Hex } from "./body";
import { badRequest, conflict, HttpError, notFound } from "./problem";

const BATCH_ID_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** How long a request for a batch id that is in flight waits for it before a 409. */
export const WAIT_FOR_INFLIGHT_MS = 5_000;
const POLL_MS = 100;

/**
 * POST /v1/streams/{stream}/events: parse → begin (ledger, watermark) → route
 * by key hash → one apply per partition → write output and marker to R2 →
 * commit (advances the watermark). Every step is idempotent per batch id, so a
 * retry after a failure anywhere re-runs to the same result.
 */
export async function ingest(env: Env, stream: string, req: Request): Promise<{ outcome: BatchOutcome; batchId: string }> {
  const source = req.headers.get("x-source") ?? "default";
  if (!NAME_PATTERN.test(source)) throw badRequest("X-Source must be 1-64 characters: letters, digits, '_', '.', '-'");
  const batchId = req.headers.get("idempotency-key") ?? crypto.randomUUID();
  if (!BATCH_ID_PATTERN.test(batchId)) throw badRequest("Idempotency-Key must be 1-255 visible ASCII characters");

  const bytes = await readBody(req, HARD_BODY_LIMIT);
  const rows = parseRows(bytes, req.headers.get("content-type"));
  const hash = await sha256Hex(bytes);
  const coordinator = coordinatorStub(env, stream);

  const begun = await beginOrWait(() => coordinator.begin(source, batchId, { hash, bytes: bytes.byteLength, rows: rows.length }));
  switch (begun.kind) {
    case "missing":
      throw notFound(`stream "${stream}" does not exist; create it with PUT /v1/streams/${stream}`);
    case "too-large":
      throw new HttpError(413, "batch-too-large", "Payload too large", begun.detail);
    case "conflict":
      throw new HttpError(422, "idempotency-key-reused", "Idempotency key reused",
        `batch id "${batchId}" from source "${source}" was already used with a different body`);
    case "busy":
      throw conflict("batch-in-flight", `batch id "${batchId}" is being processed by another request; retry later`,
        {}, { "retry-after": String(Math.max(1, Math.ceil(begun.retryAfterMs / 1000))) });
    case "replay":
      return { outcome: begun.outcome, batchId };
  }

  const { config, epoch, watermark } = begun;
  const startedAt = Date.now();
  const fault = requestedFault(req.headers);
  try {
    // Planned against the batch's first begin time, so a retry validates the same way.
    const plan = planBatch(config, rows, begun.begunAt);
    const settings = dedupSettings(config);
    const ledgerKey = `${source}\n${batchId}`;
    const touched: TouchedPartition[] = [];
    const decisions = new Map<number, string>();
    await Promise.all(
      [...plan.subBatches].map(async ([p, sub], i) => {
        const r = await partitionStub(env, stream, p).apply({
          epoch,
          batch: ledgerKey,
          watermark,
          settings,
          rows: sub.map((a) => ({ index: a.index, key: a.key, eventTime: a.eventTime })),
          ...(fault === "partition-midway" && i === 0 ? { fault } : {}),
        });
        decisions.set(p, r.decisions);
        touched.push({ p, rows: r.rows, bytes: r.bytes, watermark: r.watermark, inserted: r.inserted, removed: r.removed });
      }),
    );
    const { emitted, late, counts } = mergeDecisions(plan, decisions);
    failAt(fault, "after-decide");
    const judgedBy = new Map(touched.map((t) => [t.p, t.watermark]));
    const objects = await writeBatch(
      env.SINK,
      { stream, epoch, source, batchId },
      {
        data: encodeOutput(emitted),
        late: encodeLate({ source, batchId }, late, (p) => judgedBy.get(p)!),
        rejected: encodeRejected({ source, batchId }, counts.rejected, rows),
      },
      { stream, source, batchId, watermark, emitted: counts.emitted, late: counts.late, rejected: counts.rejected.length },
      fault,
    );
    failAt(fault, "after-marker");
    const outcome = await coordinator.commit({
      source, batchId, maxEventTime: plan.maxEventTime, counts, touched, objects, startedAt,
    });
    return { outcome, batchId };
  } catch (e) {
    // Let the producer's retry start at once; everything above is safe to re-run.
    await coordinator.release(source, batchId).catch(() => undefined);
    throw e;
  }
}

async function beginOrWait(begin: () => Promise<BeginResult>): Promise<BeginResult> {
  const deadline = Date.now() + WAIT_FOR_INFLIGHT_MS;
  for (;;) {
    const r = await begin();
    if (r.kind !== "busy" || Date.now() + POLL_MS > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

import { dedupSettings, encodeLate, encodeOutput, encodeRejected, mergeDecisions, planBatch } from "../stream/batch";
import { NAME_PATTERN } from "../stream/config";
import type { BatchOutcome } from "../stream/report";
import { coordinatorStub, partitionStub, type Env } from "../env";
import type { BeginResult, Coordinator, IngestAuth, TouchedPartition } from "../coordinator";
import { failAt, requestedFault } from "../faults";
import { writeBatch } from "../sink";
import { bearerToken, isAdminToken } from "./auth";
import { HARD_BODY_LIMIT, parseRows, readBody, sha256Hex } from "./body";
import { hashToken, openSecret, parseSignature, SIGNATURE_TOLERANCE_S, verifySignature, withinReplayWindow } from "./credentials";
import { badRequest, conflict, forbidden, HttpError, notConfigured, notFound, unauthorized } from "./problem";

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
  const sourceHeader = req.headers.get("x-source");
  if (sourceHeader !== null && !NAME_PATTERN.test(sourceHeader)) {
    throw badRequest("X-Source must be 1-64 characters: letters, digits, '_', '.', '-'");
  }
  const batchId = req.headers.get("idempotency-key") ?? crypto.randomUUID();
  if (!BATCH_ID_PATTERN.test(batchId)) throw badRequest("Idempotency-Key must be 1-255 visible ASCII characters");
  const coordinator = coordinatorStub(env, stream);
  const { auth, bytes } = await authenticate(env, coordinator, req, sourceHeader);
  const rows = parseRows(bytes, req.headers.get("content-type"));
  const hash = await sha256Hex(bytes);

  const begun = await beginOrWait(() => coordinator.begin(sourceHeader, batchId, { hash, bytes: bytes.byteLength, rows: rows.length }, auth));
  const source = "source" in begun ? begun.source : sourceHeader ?? "default";
  switch (begun.kind) {
    case "missing":
      throw notFound(`stream "${stream}" does not exist; create it with PUT /v1/streams/${stream}`);
    case "unauthorized":
      throw forbidden("the token is not valid for this stream");
    case "forbidden":
      throw forbidden(begun.detail);
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

/**
 * Who sends: the admin token, a source's bearer token (checked by the
 * coordinator in begin, against the stored hash) or an HMAC signature of the
 * body (checked here). Returns the body too, since a signature covers it.
 */
async function authenticate(
  env: Env,
  coordinator: DurableObjectStub<Coordinator>,
  req: Request,
  sourceHeader: string | null,
): Promise<{ auth: IngestAuth; bytes: Uint8Array }> {
  const bearer = bearerToken(req.headers.get("authorization"));
  const signature = req.headers.get("x-signature");
  if (bearer === null && signature === null) {
    await isAdminToken("", env); // 503 when the service has no admin token at all
    throw unauthorized("send Authorization: Bearer <token> (the admin token or a source token) or an X-Signature");
  }
  const bytes = await readBody(req, HARD_BODY_LIMIT);
  if (bearer !== null) {
    return { auth: (await isAdminToken(bearer, env)) ? { kind: "admin" } : { kind: "token", hash: await hashToken(bearer) }, bytes };
  }
  return { auth: { kind: "hmac", credentialId: await verifiedSigner(env, coordinator, sourceHeader ?? "default", signature!, bytes) }, bytes };
}

/** Signing secrets per stream and source, decrypted, kept briefly; begin() re-checks the credential still exists. */
const signerCache = new Map<string, { at: number; keys: { id: string; secret: string }[] }>();
const SIGNER_CACHE_MS = 30_000;
/** A signature that matches no cached secret refetches them (a new credential), at most this often. */
const SIGNER_REFETCH_MS = 1_000;

async function verifiedSigner(
  env: Env,
  coordinator: DurableObjectStub<Coordinator>,
  source: string,
  header: string,
  body: Uint8Array,
): Promise<string> {
  const sig = parseSignature(header);
  const now = Date.now();
  // Refused before any round trip to the coordinator.
  if (!withinReplayWindow(sig.t, now)) {
    throw unauthorized(`the signature's timestamp is more than ${SIGNATURE_TOLERANCE_S} s from now`);
  }
  const cacheKey = `${coordinator.id}\n${source}`;
  let entry = signerCache.get(cacheKey);
  for (let attempt = 0; attempt < 2; attempt++) {
    if (!entry || now - entry.at > (attempt === 0 ? SIGNER_CACHE_MS : SIGNER_REFETCH_MS)) {
      const creds = (await coordinator.credentials(source, true)).filter((c) => c.type === "hmac");
      if (creds.length > 0 && !env.CREDENTIALS_KEY) throw notConfigured("the CREDENTIALS_KEY secret is not set");
      const keys = await Promise.all(creds.map(async (c) => ({ id: c.id, secret: await openSecret(c.material, env.CREDENTIALS_KEY!) })));
      signerCache.set(cacheKey, (entry = { at: now, keys }));
    }
    for (const k of entry.keys) if (await verifySignature(k.secret, sig, body, now)) return k.id;
  }
  throw unauthorized(`the signature does not match any signing secret of source "${source}"`);
}

async function beginOrWait(begin: () => Promise<BeginResult>): Promise<BeginResult> {
  const deadline = Date.now() + WAIT_FOR_INFLIGHT_MS;
  for (;;) {
    const r = await begin();
    if (r.kind !== "busy" || Date.now() + POLL_MS > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

import { coordinatorStub, type CoordinatorStub, type Env } from "../env";
import { WebhookTally, type WebhookEvent } from "../webhooks/tally";
import type { BatchOutcome } from "../stream/batch-outcome";
import { batchIdFor, isStale, precheck, PROVIDER_TYPES, PROVIDERS, type ProviderType } from "../webhooks";
import { admitWebhook, proveWebhook, webhookRefused } from "./admission";
import { readBody } from "../http/body";
import { sha256Hex } from "../lib/bytes";
import { httpOutcome } from "./ingest";
import { submitBatch } from "../ingest/submit";
import { ShardRouter } from "../ingest/shard-router";
import { exhaustive, type SubmitResult } from "../ingest/result";
import { HttpError, webhookUnauthorized } from "../http/problem";

/** The headers by which a delivery says which provider signed it (GitHub's SHA-1 one only to say it is not accepted). */
const SIGNED_BY: Record<ProviderType, string[]> = {
  stripe: ["stripe-signature"],
  github: ["x-hub-signature-256", "x-hub-signature"],
  shopify: ["x-shopify-hmac-sha256"],
  "standard-webhooks": ["webhook-signature", "svix-signature"],
};

const EXPECTED = PROVIDER_TYPES.map((t) => PROVIDERS[t].signatureHeader).join(", ");

/** webhook()'s first check alone, the gate of the webhook route (src/api/route.ts): no provider signature, refused before the URL's names are looked at. */
export function requireProviderSignature(headers: Headers): void {
  if (!PROVIDER_TYPES.some((t) => SIGNED_BY[t].some((h) => headers.has(h)))) throw webhookUnauthorized(`no provider signature: send one of ${EXPECTED}`);
}

/**
 * POST /v1/streams/{stream}/sources/{source}/webhook (DESIGN §6): a provider's
 * delivery, verified with the provider's own scheme, becomes one envelope row,
 * under a batch id derived from signed bytes only (the provider's signed event
 * id, or for body-only schemes the body's SHA-256) so that a redelivery, or a
 * captured delivery re-sent with other headers, is a replay or a duplicate.
 * In order, and refused at the first failure:
 *
 * 1. the headers alone: a provider's signature header, well-formed, and for
 *    schemes that sign a timestamp, within 300 s of now either way (401);
 * 2. one cheap lookup of the source's provider credentials (the same 401
 *    whether the stream is missing, the source has none, they are another
 *    provider's, or the source is disabled), which also yields the limits;
 * 3. the body, within the source's maxWebhookBytes (1 MiB by default, never
 *    more than the stream's maxBodyBytes; 413, and no more of it read), then
 *    the signature against every live secret of the source (401);
 * 4. the envelope (400; the JSON within the depth limit), then submitBatch()
 *    (webhookOutcome: a credential revoked meanwhile is the same 401).
 */
export async function webhook(
  env: Env,
  stream: string,
  source: string,
  req: Request,
  /** the request's waitUntil: the webhook counts go to the Coordinator after the answer (src/webhooks/tally.ts) */
  waitUntil: (p: Promise<unknown>) => void = () => undefined,
): Promise<{ outcome: BatchOutcome; batchId: string }> {
  const now = Date.now();
  const claimed = PROVIDER_TYPES.filter((t) => SIGNED_BY[t].some((h) => req.headers.has(h)));
  if (claimed.length === 0) throw webhookUnauthorized(`no provider signature: send one of ${EXPECTED}`);
  const coordinator = coordinatorStub(env, stream);
  const count = (event: WebhookEvent) => countWebhook(coordinator, stream, source, event, waitUntil);
  const checked = claimed.map((t) => ({ type: t, r: precheck(t, req.headers, now) }));
  const fit = checked.filter((c) => c.r.ok).map((c) => c.type);
  if (fit.length === 0) {
    count(checked.some((c) => isStale(c.r)) ? "stale" : "malformed");
    throw webhookUnauthorized(checked.map((c) => (c.r.ok ? "" : c.r.reason)).join("; "));
  }

  const caller = await admitWebhook(stream, coordinator, source);
  // Signed as another provider than the source's credentials: the same 401 as a wrong secret.
  if (!fit.includes(caller.provider)) {
    count("wrong-provider");
    throw webhookRefused(source);
  }
  const provider = PROVIDERS[caller.provider];

  const body = await readBody(req, caller.maxBytes).catch((e: unknown) => {
    throw e instanceof HttpError && e.status === 413 ? webhookTooLarge(caller.maxBytes, source) : e;
  });
  const auth = await proveWebhook(env, stream, coordinator, caller, (secrets) => provider.verify(req.headers, body, secrets, now)).catch((e: unknown) => {
    count("bad-signature");
    throw e;
  });
  const envelope = provider.envelope(req.headers, body, now, await sha256Hex(body));
  if (!envelope.ok) {
    throw new HttpError(400, "invalid-webhook", "Invalid webhook", `the ${provider.type} delivery cannot become a row: ${envelope.reason}`);
  }
  const batchId = await batchIdFor(provider.type, envelope.identity);
  // The identity is the batch id, which only signed bytes decide: a Stripe
  // redelivery's bytes may differ (pending_webhooks) and must replay, never be a
  // 422; a GitHub or Shopify one is the same bytes (its id is their hash).
  const r = await submitBatch(
    env,
    stream,
    {
      sourceHeader: source,
      batchId,
      auth,
      rows: [envelope.row],
      identity: `webhook:${batchId}`,
      bytes: body.byteLength,
    },
    new ShardRouter(env, stream, coordinator),
  );
  if (r.kind === "replayed") count("replayed");
  return { outcome: webhookOutcome(r, source), batchId };
}

/** The counts of this isolate (per stream and source), handed to each stream's Coordinator at most once per FLUSH_MS per source. */
const tally = new WebhookTally();

function countWebhook(coordinator: CoordinatorStub, stream: string, source: string, event: WebhookEvent, waitUntil: (p: Promise<unknown>) => void): void {
  const due = tally.note(stream, source, event, Date.now());
  if (due === null) return;
  // Counting never fails a delivery: a lost hand-over loses counts, not rows.
  const hand = (deltas: [string, number][]) => (deltas.length === 0 ? Promise.resolve() : coordinator.noteWebhooks(source, deltas).catch(() => undefined));
  if ("flush" in due) waitUntil(hand(due.flush));
  else waitUntil(new Promise((resolve) => setTimeout(resolve, due.in)).then(() => hand(tally.take(stream, source, Date.now()))));
}

/** A delivery over its source's cap: refused before its signature is checked, with no more of it read. */
const webhookTooLarge = (limit: number, source: string) =>
  new HttpError(
    413,
    "body-too-large",
    "Payload too large",
    `the delivery's body is larger than ${limit} bytes; source "${source}" reads at most ${limit} before checking a webhook signature ` +
      `(sources.${source}.maxWebhookBytes, default 1 MiB, never above the stream's limits.maxBodyBytes)`,
  );

/**
 * The webhook adapter's mapper. A delivery's signature is its only proof, so
 * a credential that the Coordinator's admission no longer accepts (revoked, or the source
 * disabled, since admission) is the same 401 as a wrong secret: one answer
 * for every unproven signature. Everything else answers as POST …/events does.
 */
export function webhookOutcome(r: SubmitResult, source: string): BatchOutcome {
  switch (r.kind) {
    case "unauthorized":
    case "forbidden":
      throw webhookRefused(source);
    case "committed":
    case "replayed":
    case "missing":
    case "too-large":
    case "conflict":
    case "busy":
    case "invalid":
    case "failed":
      return httpOutcome(r, { auth: { kind: "admin" }, sourceHeader: source });
    default:
      return exhaustive(r);
  }
}

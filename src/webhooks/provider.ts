/**
 * What every provider module implements: its own signature scheme, checked
 * before anything else, and the one envelope row a delivery becomes
 * (DESIGN §6). Pure: no Cloudflare imports, no I/O.
 */
export type ProviderType = "stripe" | "github" | "shopify" | "standard-webhooks";

export type Refusal = { ok: false; reason: string };
export type VerifyResult = { ok: true; secretIndex: number } | Refusal;
export type PrecheckResult = { ok: true } | Refusal;

/** The row a delivery becomes; a webhook stream has `"key": ["id"], "eventTime": "time"`. */
export interface EnvelopeRow {
  /** signed: the provider's signed event id, else the SHA-256 (hex) of the signed body */
  id: string;
  /** epoch ms; never later than the arrival time where the scheme does not sign it */
  time: number;
  type: string | null;
  /** the provider's delivery id header where the scheme signs the body only: kept for reference, not verified */
  deliveryId?: string;
  payload: Record<string, unknown>;
}

/**
 * `identity` is what the batch id is derived from (batchIdFor): signed bytes
 * only (DESIGN §6), so that a redelivery replays and a captured delivery
 * re-sent with other headers is a replay too.
 */
export type EnvelopeResult = { ok: true; row: EnvelopeRow; identity: string } | Refusal;

export interface Provider {
  readonly type: ProviderType;
  /** The header that carries the signature, for messages and docs. */
  readonly signatureHeader: string;
  /** The signed timestamp (epoch seconds) where the scheme has one in a header, else null. */
  timestamp(headers: Headers): number | null;
  /** Refuses a missing or malformed signature, or a stale timestamp, before the body is read. */
  precheck(headers: Headers, nowMs: number): PrecheckResult;
  /** The full check: precheck, then the signature against each secret (several are live during rotation). */
  verify(headers: Headers, body: Uint8Array, secrets: string[], nowMs: number): Promise<VerifyResult>;
  /**
   * Whose bytes say which event a delivery is: "signed-id" (the scheme signs
   * an event id) or "body" (it signs the body alone: the id is the body's hash).
   */
  readonly identity: "signed-id" | "body";
  /** The envelope row of a verified delivery; `bodySha256`: the hex SHA-256 of `body`. */
  envelope(headers: Headers, body: Uint8Array, nowMs: number, bodySha256: string): EnvelopeResult;
  /** Why a secret cannot be used with this provider, or null: for checking a credential when it is stored. */
  secretProblem(secret: string): string | null;
}

export const refuse = (reason: string): Refusal => ({ ok: false, reason });

/** Refusals whose signed timestamp is outside the replay window: counted apart (src/webhooks/tally.ts), with the shape of any other. */
const stale = new WeakSet<Refusal>();
export const refuseStale = (reason: string): Refusal => {
  const r = refuse(reason);
  stale.add(r);
  return r;
};
export const isStale = (r: PrecheckResult): boolean => !r.ok && stale.has(r);

/**
 * Fields of the envelope row that a provider's redeliveries of one event may
 * change (DESIGN §11): left out of the content digest of every row that
 * arrives through that provider's webhook (webhookVolatile), so that a
 * redelivery judged afresh (after the idempotency window, or through another
 * source) is a duplicate, not a conflict. `"volatile": ["webhook:<type>"]`
 * lists them for rows of that provider that arrive by other means.
 * - stripe: the event's `pending_webhooks` counts the endpoints still to be sent to;
 * - github, shopify: `time` (the arrival, or Shopify's unsigned Triggered-At),
 *   `deliveryId` and `type` come from unsigned headers that a redelivery of the
 *   same signed body may change (the id is that body's hash, so a payload that
 *   changed is another id);
 * - standard-webhooks: `time` is the signed webhook-timestamp, set per attempt, when the body has no timestamp.
 */
export const PROVIDER_VOLATILE: Record<ProviderType, readonly string[]> = {
  stripe: ["payload.pending_webhooks"],
  github: ["time", "deliveryId", "type"],
  shopify: ["time", "deliveryId", "type"],
  "standard-webhooks": ["time"],
};

const NO_FIELDS: readonly string[] = [];

/**
 * The volatile fields a batch takes by default: a provider webhook's batch id
 * is `<type>:…` (batchIdFor), a namespace no other ingress may use
 * (src/sources/ids.ts), so the batch id alone says which provider a row came
 * from, and a batch retried is judged by the same fields.
 */
export function webhookVolatile(batchId: string): readonly string[] {
  const at = batchId.indexOf(":");
  const type = at > 0 ? batchId.slice(0, at) : "";
  return Object.hasOwn(PROVIDER_VOLATILE, type) ? PROVIDER_VOLATILE[type as ProviderType] : NO_FIELDS;
}

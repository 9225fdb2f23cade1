/** The providers whose webhooks a stream takes (src/webhooks/ implements each). */
export type ProviderType = "stripe" | "github" | "shopify" | "standard-webhooks";

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
 * (src/ingest/batch-id-namespaces.ts), so the batch id alone says which provider a row came
 * from, and a batch retried is judged by the same fields.
 */
export function webhookVolatile(batchId: string): readonly string[] {
  const at = batchId.indexOf(":");
  const type = at > 0 ? batchId.slice(0, at) : "";
  return Object.hasOwn(PROVIDER_VOLATILE, type) ? PROVIDER_VOLATILE[type as ProviderType] : NO_FIELDS;
}

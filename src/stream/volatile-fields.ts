import { PROVIDER_VOLATILE, webhookVolatile, type ProviderType } from "./provider-volatile";

/**
 * The fields a row's content digest leaves out: the stream's `volatile`, and
 * for a batch from a provider webhook (its id `stripe:…`) that provider's
 * (PROVIDER_VOLATILE) by default. Decided by the batch id, so a retry of a
 * batch is judged by the same fields.
 */
export function volatileFor(config: { volatile?: readonly string[] }, batchId?: string): readonly string[] {
  return withProviderFields(config.volatile ?? [], batchId);
}

/** `fields`, and for a provider webhook's batch (its id `stripe:…`) that provider's volatile fields after them, once each. */
function withProviderFields(fields: readonly string[], batchId: string | undefined): readonly string[] {
  const preset = batchId === undefined ? [] : webhookVolatile(batchId);
  if (preset.length === 0) return fields;
  return fields.length === 0 ? preset : [...new Set([...fields, ...preset])];
}

/**
 * The fields a content key leaves out: the stream's `exclude`, and for a
 * batch from a provider webhook (its id `stripe:…`) what that provider's
 * redeliveries change (PROVIDER_VOLATILE), as the digest leaves them out: a
 * redelivery keys as the same event. Decided by the batch id, so a retry keys
 * the same way.
 */
export function contentExcludeFor(config: { contentKey?: { exclude: readonly string[] } }, batchId?: string): readonly string[] {
  return withProviderFields(config.contentKey?.exclude ?? [], batchId);
}

/** "webhook:<provider>" in `volatile`: that provider's volatile fields (src/stream/provider-volatile.ts). */
export const WEBHOOK_PRESET = /^webhook:(.+)$/;

/** "webhook:<provider>" stands for that provider's volatile fields (src/stream/provider-volatile.ts); the rest are fields. */
export function expandVolatile(fields: readonly string[]): string[] {
  const out = fields.flatMap((f) => {
    const preset = WEBHOOK_PRESET.exec(f)?.[1];
    return preset !== undefined && Object.hasOwn(PROVIDER_VOLATILE, preset) ? PROVIDER_VOLATILE[preset as ProviderType] : [f];
  });
  return [...new Set(out)];
}

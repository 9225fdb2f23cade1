/**
 * Provider webhooks (DESIGN §6): each provider's signature scheme and the
 * envelope row a delivery becomes. Pure, so that Workers and Node run it alike.
 */
import { github } from "./github";
import type { Provider, ProviderType } from "./provider";
import { shopify } from "./shopify";
import { standardWebhooks } from "./standard-webhooks";
import { stripe } from "./stripe";

export const PROVIDERS: Record<ProviderType, Provider> = {
  stripe,
  github,
  shopify,
  "standard-webhooks": standardWebhooks,
};

export const PROVIDER_TYPES = Object.keys(PROVIDERS) as ProviderType[];

export const isProviderType = (value: unknown): value is ProviderType => typeof value === "string" && Object.hasOwn(PROVIDERS, value);

/** A pre-body check: refuses a missing or malformed signature header, or a stale timestamp. */
export const precheck = (type: ProviderType, headers: Headers, nowMs: number) => PROVIDERS[type].precheck(headers, nowMs);

export type { EnvelopeResult, EnvelopeRow, PrecheckResult, Provider, ProviderType, VerifyResult } from "./provider";
export { batchIdFor } from "./envelope";
export { isStale } from "./provider";
export { TOLERANCE_S } from "./signature";
export { signGithub } from "./github";
export { signShopify } from "./shopify";
export { signStandardWebhooks, standardWebhooksKey } from "./standard-webhooks";
export { signStripe } from "./stripe";

/**
 * How long after an event each provider may still deliver it for the first
 * time, while our endpoint fails: a webhook source's watermark delay must
 * cover it, or a delivery that finally gets through is late and goes to the
 * late lane instead of the output. The delay advisor never advises less for a
 * webhook source (src/stream/advisor/live.ts). Pure.
 *
 * - stripe: "Stripe attempts to deliver events to your destination for up to
 *   three days with an exponential back off" (live mode; Stripe's webhook docs,
 *   "Retry behavior"); the row's time is the event's `created`.
 * - shopify: a failed delivery is retried 8 times over 4 hours (Shopify's
 *   webhook docs, "Retry frequency"); the row's time is X-Shopify-Triggered-At,
 *   the first attempt's.
 * - standard-webhooks (Svix): retried after 5 s, 5 min, 30 min, 2 h, 5 h,
 *   10 h and 10 h, about 27.6 hours after the first attempt (Svix's "Retries"
 *   schedule); the row's time is the payload's `timestamp`.
 * - github: GitHub never redelivers by itself, and a row's time is its arrival
 *   (GitHub signs no time), so a redelivery is never late: no floor.
 */
import type { ProviderType } from "./provider";

const HOUR = 3_600_000;

export const RETRY_HORIZON_MS: Record<ProviderType, number> = {
  stripe: 72 * HOUR,
  shopify: 4 * HOUR,
  "standard-webhooks": 28 * HOUR,
  github: 0,
};

/** Why a webhook source's delay has its floor, in the advice's words. */
export function horizonReason(provider: ProviderType): string {
  switch (provider) {
    case "stripe":
      return "Stripe retries a failed delivery for up to 3 days, and its rows keep the event's own time: a shorter delay makes a delivery that gets through late";
    case "shopify":
      return "Shopify retries a failed delivery 8 times over 4 hours, with the first attempt's X-Shopify-Triggered-At as its time";
    case "standard-webhooks":
      return "Standard Webhooks senders (Svix's schedule) retry a failed delivery for about 28 hours, with the event's own timestamp";
    case "github":
      return "GitHub rows are timed by their arrival, so a redelivery is never late";
  }
}

import { route } from "../route";
import { outcomeSchema } from "../schemas";
import { webhook } from "../webhook";
import { STREAM } from "./shared";

// Verified over the raw bytes by src/api/webhook.ts, after the source is admitted from the URL.
export const postWebhook = route({
  method: "post",
  path: `${STREAM}/sources/:source/webhook`,
  summary: "A provider's webhook delivery (Stripe, GitHub, Shopify, Standard Webhooks)",
  tag: "ingest",
  auth: "provider",
  description: "Verified by the source's provider credential; one delivery is one envelope row, and a redelivery replays.",
  responses: {
    200: {
      schema: outcomeSchema,
      description: "the delivery's outcome",
      headers: {
        "Idempotency-Key":
          "the batch id, derived from what the provider signs: its event id (Stripe, Standard Webhooks) or the SHA-256 of the body (GitHub, Shopify)",
      },
    },
  },
  handler: async (c) => {
    const { outcome, batchId } = await webhook(c.env, c.get("stream"), c.req.param("source")!, c.req.raw, (p) => c.executionCtx.waitUntil(p));
    return c.json(outcome, 200, { "idempotency-key": batchId });
  },
});

export const routes = [postWebhook];

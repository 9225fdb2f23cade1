import { createHash } from "node:crypto";
import { expect, test } from "vitest";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { validateRow } from "../../../src/stream/schema";
import { batchIdFor, PROVIDERS, type ProviderType } from "../../../src/webhooks";
import { PROVIDER_VOLATILE, webhookVolatile } from "../../../src/stream/provider-volatile";
import { enc, NOW_MS, T } from "./conformance";

/** One realistic delivery per provider: its headers and body. */
const deliveries: Record<ProviderType, [Record<string, string>, unknown]> = {
  stripe: [{}, { id: "evt_1", object: "event", created: T - 5, type: "invoice.paid", data: {} }],
  github: [{ "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event": "push" }, { ref: "refs/heads/main" }],
  shopify: [{ "X-Shopify-Event-Id": "98880550", "X-Shopify-Topic": "orders/create", "X-Shopify-Triggered-At": "2026-11-30T10:00:27.877Z" }, { id: 1 }],
  "standard-webhooks": [
    { "webhook-id": "msg_1", "webhook-timestamp": String(T) },
    { type: "invoice.paid", timestamp: "2026-11-30T10:00:00Z", data: {} },
  ],
};

// DESIGN §6: a stream fed by webhooks is created with "key": ["id"], "eventTime": "time".
const parsed = parseStreamConfig({ key: ["id"], eventTime: "time", watermarkDelay: "1 hour" });
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const config = parsed.config;

test.each(Object.keys(deliveries) as ProviderType[])("a %s envelope is an accepted row of a webhook stream, keyed by its id, timed by its time", (type) => {
  const [headers, body] = deliveries[type];
  const bytes = enc(JSON.stringify(body));
  const envelope = PROVIDERS[type].envelope(new Headers(headers), bytes, NOW_MS, createHash("sha256").update(bytes).digest("hex"));
  if (!envelope.ok) throw new Error(envelope.reason);
  expect(validateRow(config, envelope.row, 0, NOW_MS)).toEqual({
    index: 0,
    row: envelope.row,
    key: JSON.stringify([envelope.row.id]),
    eventTime: envelope.row.time,
    digest: expect.stringMatching(/^-?\d+$/), // the content digest of DESIGN §11
  });
});

const digestOf = (c: StreamConfig, row: unknown, batchId?: string) =>
  (validateRow(c, row, 0, NOW_MS, { source: "hooks", watermark: 0, ...(batchId === undefined ? {} : { batchId }) }) as { digest?: string }).digest;

const envelopeOf = (type: ProviderType, headers: Record<string, string>, body: unknown) => {
  const bytes = enc(JSON.stringify(body));
  const e = PROVIDERS[type].envelope(new Headers(headers), bytes, NOW_MS, createHash("sha256").update(bytes).digest("hex"));
  if (!e.ok) throw new Error(e.reason);
  return e.row;
};

test("a Stripe redelivery whose pending_webhooks changed is a duplicate when it came through the webhook, or with the webhook:stripe volatile fields", async () => {
  const event = { id: "evt_1", object: "event", created: T - 5, type: "invoice.paid", data: {}, pending_webhooks: 2 };
  const rows = [event, { ...event, pending_webhooks: 1 }].map((b) => envelopeOf("stripe", {}, b));
  const withVolatile = (volatile: string[]) => {
    const c = parseStreamConfig({ key: ["id"], eventTime: "time", watermarkDelay: "1 hour", ...(volatile.length ? { volatile } : {}) });
    if (!c.ok) throw new Error(JSON.stringify(c.errors));
    return c.config;
  };
  // Rows of Stripe events that arrive by other means (an HTTP producer, a queue): a conflict unless the stream lists the preset.
  expect(digestOf(config, rows[0], "b1")).not.toBe(digestOf(config, rows[1], "b1"));
  expect(digestOf(config, rows[0])).not.toBe(digestOf(config, rows[1]));
  const preset = withVolatile(["webhook:stripe"]);
  expect(digestOf(preset, rows[0])).toBe(digestOf(preset, rows[1]));
  // Through the webhook (batch id stripe:…): the preset applies by default.
  const batchId = await batchIdFor("stripe", "evt_1");
  expect(digestOf(config, rows[0], batchId)).toBe(digestOf(config, rows[1], batchId));
  // …and only the preset: another amount under the same id is a conflict.
  const changed = envelopeOf("stripe", {}, { ...event, data: { amount: 1 } });
  expect(digestOf(config, changed, batchId)).not.toBe(digestOf(config, rows[0], batchId));
});

test.each(["github", "shopify"] as const)("a %s redelivery of the same signed body with new headers has the same digest through the webhook", async (type) => {
  const [headers, body] = deliveries[type];
  const first = envelopeOf(type, headers, body);
  const redelivered = envelopeOf(
    type,
    {
      ...headers,
      "X-GitHub-Delivery": "0b989ba4-242f-11e5-81e1-c7b6966d2516",
      "X-GitHub-Event": "ping",
      "X-Shopify-Event-Id": "98880551",
      "X-Shopify-Topic": "orders/updated",
      "X-Shopify-Triggered-At": "2026-11-30T10:05:00.000Z",
    },
    body,
  );
  expect(redelivered.id).toBe(first.id);
  expect(redelivered).not.toEqual(first);
  const batchId = await batchIdFor(type, first.id);
  expect(digestOf(config, redelivered, batchId)).toBe(digestOf(config, first, batchId));
  expect(digestOf(config, redelivered)).not.toBe(digestOf(config, first));
});

test("a Standard Webhooks retry (a new webhook-timestamp, the body without one) has the same digest through the webhook", async () => {
  const body = { type: "invoice.paid", data: {} };
  const [a, b] = [T, T + 60].map((t) => envelopeOf("standard-webhooks", { "webhook-id": "msg_1", "webhook-timestamp": String(t) }, body));
  expect(a.time).not.toBe(b.time);
  const batchId = await batchIdFor("standard-webhooks", "msg_1");
  expect(digestOf(config, a, batchId)).toBe(digestOf(config, b, batchId));
  // `time` is the stream's event time, which no conflict looks at, preset or not (src/stream/content.ts conflictBlindFields).
  expect(digestOf(config, a, "msg_1")).toBe(digestOf(config, b, "msg_1"));
});

test("webhookVolatile: only a provider's batch-id namespace takes its fields", () => {
  expect(webhookVolatile("stripe:evt_1")).toEqual(PROVIDER_VOLATILE.stripe);
  expect(webhookVolatile("standard-webhooks:sha256:00")).toEqual(PROVIDER_VOLATILE["standard-webhooks"]);
  for (const id of ["stripe", "qid:stripe:evt_1", "r2:stripe:x", "b1", ":x", "constructor:x", "__proto__:x"]) expect(webhookVolatile(id)).toEqual([]);
});

import { createHash } from "node:crypto";
import { expect, test } from "vitest";
import { parseStreamConfig } from "../../../src/stream/config";
import { validateRow } from "../../../src/stream/schema";
import { PROVIDERS, type ProviderType } from "../../../src/webhooks";
import { enc, NOW_MS, T } from "./conformance";

/** One realistic delivery per provider: its headers and body. */
const deliveries: Record<ProviderType, [Record<string, string>, unknown]> = {
  stripe: [{}, { id: "evt_1", object: "event", created: T - 5, type: "invoice.paid", data: {} }],
  github: [{ "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event": "push" }, { ref: "refs/heads/main" }],
  shopify: [{ "X-Shopify-Event-Id": "98880550", "X-Shopify-Topic": "orders/create", "X-Shopify-Triggered-At": "2026-11-30T10:00:27.877Z" }, { id: 1 }],
  "standard-webhooks": [{ "webhook-id": "msg_1", "webhook-timestamp": String(T) }, { type: "invoice.paid", timestamp: "2026-11-30T10:00:00Z", data: {} }],
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

test("a Stripe redelivery whose pending_webhooks changed is a conflict unless the stream takes the webhook:stripe volatile fields", () => {
  const event = { id: "evt_1", object: "event", created: T - 5, type: "invoice.paid", data: {}, pending_webhooks: 2 };
  const rowOf = (body: unknown) => {
    const bytes = enc(JSON.stringify(body));
    const e = PROVIDERS.stripe.envelope(new Headers(), bytes, NOW_MS, createHash("sha256").update(bytes).digest("hex"));
    if (!e.ok) throw new Error(e.reason);
    return e.row;
  };
  const digests = (volatile: string[]) => {
    const c = parseStreamConfig({ key: ["id"], eventTime: "time", watermarkDelay: "1 hour", ...(volatile.length ? { volatile } : {}) });
    if (!c.ok) throw new Error(JSON.stringify(c.errors));
    return [event, { ...event, pending_webhooks: 1 }].map((b) => (validateRow(c.config, rowOf(b), 0, NOW_MS) as { digest?: string }).digest);
  };
  const [a, b] = digests([]);
  expect(a).not.toBe(b);
  const [c, d] = digests(["webhook:stripe"]);
  expect(c).toBe(d);
});

/**
 * Webhooks from providers over real HTTP (issue 8, DESIGN §6), signed in Node
 * by each provider's reference implementation (Shopify, which publishes none,
 * by node:crypto following its documented algorithm): retries are one output
 * row, and an event redelivered days later is a replay, or late when it comes
 * in through another source.
 */
import { sign as githubSign } from "@octokit/webhooks-methods";
import { createHash, createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { describe, expect, test } from "vitest";
import { parseNdjson, useServer, type Outcome } from "./server";

const { api } = useServer();
const stripe = new Stripe("sk_test_unused");

const DAY = 86_400_000;
const nowS = () => Math.floor(Date.now() / 1000);
/** Event times days back in the past: the watermark can then move days past an event without the clock moving. */
const daysAgo = (days: number) => Math.floor((Date.now() - days * DAY) / 1000) * 1000;

interface Event {
  id: string;
  /** epoch ms, whole seconds */
  time: number;
  /** differs between a provider's attempts (Stripe's pending_webhooks) */
  attempt: number;
}

interface Provider {
  type: "stripe" | "github" | "shopify" | "standard-webhooks";
  secret: string;
  /** what the provider sends for an event, signed at t (unix s) */
  delivery(secret: string, e: Event, t: number): Promise<{ body: string; headers: Record<string, string> }>;
  /** whether the scheme signs the event id; else (GitHub, Shopify) the row id is the SHA-256 of the body (DESIGN §6) */
  signsId: boolean;
}

/** The row id of an event: its signed id, or the SHA-256 of the signed body. */
async function rowIdOf(p: Provider, e: Event): Promise<string> {
  return p.signsId
    ? e.id
    : createHash("sha256")
        .update((await p.delivery(p.secret, e, nowS())).body)
        .digest("hex");
}

const PROVIDERS: Provider[] = [
  {
    type: "stripe",
    secret: "whsec_e2e_stripe_endpoint_secret",
    async delivery(secret, e, t) {
      const body = JSON.stringify({ id: e.id, object: "event", created: e.time / 1000, type: "invoice.paid", pending_webhooks: 4 - e.attempt });
      return { body, headers: { "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: t }) } };
    },
    signsId: true,
  },
  {
    type: "github",
    secret: "e2e github webhook secret",
    async delivery(secret, e) {
      const body = JSON.stringify({ ref: "refs/heads/main", after: createHash("sha1").update(e.id).digest("hex") });
      return { body, headers: { "x-github-delivery": e.id, "x-github-event": "push", "x-hub-signature-256": await githubSign(secret, body) } };
    },
    signsId: false,
  },
  {
    type: "shopify",
    secret: "e2e_shopify_client_secret",
    async delivery(secret, e) {
      const body = JSON.stringify({ id: 450789469, admin_graphql_api_id: `gid://shopify/Order/${e.id}`, total_price: "598.94" });
      return {
        body,
        headers: {
          "x-shopify-event-id": e.id,
          "x-shopify-webhook-id": crypto.randomUUID(), // new per attempt
          "x-shopify-topic": "orders/create",
          "x-shopify-triggered-at": new Date(e.time).toISOString(),
          "x-shopify-hmac-sha256": createHmac("sha256", secret).update(body).digest("base64"),
        },
      };
    },
    signsId: false,
  },
  {
    type: "standard-webhooks",
    secret: `whsec_${Buffer.from("e2e standard webhooks key, 32 b").toString("base64")}`,
    async delivery(secret, e, t) {
      const body = JSON.stringify({ type: "invoice.paid", timestamp: new Date(e.time).toISOString(), data: { id: "in_1" } });
      const signature = new Webhook(secret).sign(e.id, new Date(t * 1000), body);
      return { body, headers: { "webhook-id": e.id, "webhook-timestamp": String(t), "webhook-signature": signature } };
    },
    signsId: true,
  },
];

async function credential(stream: string, source: string, type: string, secret: string) {
  const r = await api.request("POST", `/v1/streams/${stream}/sources/${source}/credentials`, {
    body: JSON.stringify({ type, secret }),
    headers: { "content-type": "application/json" },
  });
  expect(r.status, r.text).toBe(201);
}

/** POSTs a delivery as the provider would: no token, no X-Source, no Idempotency-Key. */
async function deliver(stream: string, source: string, d: { body: string; headers: Record<string, string> }): Promise<Outcome> {
  const r = await api.request("POST", `/v1/streams/${stream}/sources/${source}/webhook`, {
    body: d.body,
    headers: { "content-type": "application/json", ...d.headers },
    token: null,
  });
  expect(r.status, r.text).toBe(200);
  return JSON.parse(r.text);
}

describe.each(PROVIDERS)("$type", (p) => {
  test("the same delivery sent three times (two retries, new timestamps and signatures) is one output row", async () => {
    const s = `wh-${p.type}`;
    await api.putStream(s, { key: ["id"], eventTime: "time", watermarkDelay: "1 hour", partitions: 2 });
    await credential(s, p.type, p.type, p.secret);
    const e = { id: `${p.type}-delivery-1`, time: daysAgo(0.01) };
    const outcomes: Outcome[] = [];
    for (const attempt of [1, 2, 3]) outcomes.push(await deliver(s, p.type, await p.delivery(p.secret, { ...e, attempt }, nowS() - 60 + attempt * 20)));
    const id = await rowIdOf(p, { ...e, attempt: 1 });
    expect(outcomes.map((o) => [o.batchId, o.replayed, o.emitted])).toEqual([
      [`${p.type}:${id}`, false, 1],
      [`${p.type}:${id}`, true, 1],
      [`${p.type}:${id}`, true, 1],
    ]);
    const rows = await api.output<{ id: string; type: string }>(s);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, type: expect.any(String), ...(p.signsId ? {} : { deliveryId: e.id }) });
    expect((await api.stream(s)).batches.committed).toBe(1);
  });
});

describe.each(PROVIDERS.filter((p) => p.type === "stripe" || p.type === "standard-webhooks"))("$type, days later", (p) => {
  test("a redelivery beyond the delay is a replay; the same event through another source is late, not emitted again", async () => {
    const s = `wh-late-${p.type}`;
    // The events are days apart: let a later one be that far ahead of the watermark.
    await api.putStream(s, { key: ["id"], eventTime: "time", watermarkDelay: "1 hour", maxAheadOfWatermark: "30 days", partitions: 2 });
    await credential(s, "primary", p.type, p.secret);
    const backupSecret = p.type === "stripe" ? "whsec_e2e_backup_endpoint" : `whsec_${Buffer.from("another standard webhooks key!!").toString("base64")}`;
    await credential(s, "backup", p.type, backupSecret);

    const old = { id: `${p.type}-evt-old`, time: daysAgo(5), attempt: 1 };
    expect(await deliver(s, "primary", await p.delivery(p.secret, old, nowS()))).toMatchObject({ emitted: 1, late: 0 });
    // Later events move the watermark days past the first one.
    const later = await deliver(s, "primary", await p.delivery(p.secret, { id: `${p.type}-evt-new`, time: daysAgo(1), attempt: 1 }, nowS()));
    expect(later).toMatchObject({ emitted: 1 });
    expect(later.watermarkAfter).toBeGreaterThan(old.time + 3 * DAY);

    // The provider redelivers the old event (a new signature): its batch id is recorded, so a replay.
    const redelivered = await deliver(s, "primary", await p.delivery(p.secret, { ...old, attempt: 2 }, nowS()));
    expect(redelivered).toMatchObject({ batchId: `${p.type}:${old.id}`, replayed: true, emitted: 1, late: 0 });

    // The same event through a second endpoint: another batch, the same key, far behind the watermark.
    const viaBackup = await deliver(s, "backup", await p.delivery(backupSecret, { ...old, attempt: 3 }, nowS()));
    expect(viaBackup).toMatchObject({ batchId: `${p.type}:${old.id}`, source: "backup", replayed: false, emitted: 0, duplicates: 0, late: 1 });

    expect((await api.output<{ id: string }>(s)).map((r) => r.id)).toEqual([old.id, `${p.type}-evt-new`]);
    const late = await api.request("GET", `/v1/streams/${s}/late`);
    expect(parseNdjson<{ source: string; row: { id: string; time: number } }>(late.text)).toEqual([
      expect.objectContaining({ source: "backup", reason: "late", row: expect.objectContaining({ id: old.id, time: old.time }) }),
    ]);
  });
});

/**
 * Issue 14, over real HTTP: GitHub and Shopify sign the body alone, so anyone
 * who captured one delivery can re-send it with other headers. Only signed
 * bytes are identity: no such replay adds a row or moves the watermark.
 */
describe.each(PROVIDERS.filter((p) => !p.signsId))("$type: a captured delivery re-sent with forged headers", (p) => {
  test("a new delivery id, a new type, a Triggered-At 23 h ahead: replays, no new row, the watermark unchanged; the next genuine delivery is on time", async () => {
    const s = `wh-forged-${p.type}`;
    await api.putStream(s, { key: ["id"], eventTime: "time", watermarkDelay: "1 hour", partitions: 2 });
    await credential(s, "main", p.type, p.secret);
    const e = { id: `${p.type}-captured`, time: Date.now() - 120_000, attempt: 1 };
    const captured = await p.delivery(p.secret, e, nowS());
    const genuine = await deliver(s, "main", captured);
    expect(genuine).toMatchObject({ replayed: false, emitted: 1 });
    const before = await api.stream(s);

    const idHeader = p.type === "github" ? "x-github-delivery" : "x-shopify-event-id";
    const typeHeader = p.type === "github" ? "x-github-event" : "x-shopify-topic";
    const ahead = new Date(Date.now() + 23 * 3600_000).toISOString();
    for (const [n, changes] of [
      { [idHeader]: "forged-1" },
      { [idHeader]: "forged-2", [typeHeader]: "release" },
      { [idHeader]: "forged-3", "x-shopify-triggered-at": ahead, "x-shopify-webhook-id": "forged-3" },
    ].entries()) {
      const forged = await deliver(s, "main", { body: captured.body, headers: { ...captured.headers, ...changes } });
      expect(forged, `forgery ${n + 1}`).toMatchObject({ batchId: genuine.batchId, replayed: true, emitted: 1 });
    }
    const after = await api.stream(s);
    expect(after.watermark).toBe(before.watermark);
    expect(after.sources).toEqual(before.sources);
    expect(await api.output(s)).toHaveLength(1);

    const next = await deliver(s, "main", await p.delivery(p.secret, { id: `${p.type}-next`, time: Date.now() - 60_000, attempt: 1 }, nowS()));
    expect(next).toMatchObject({ replayed: false, emitted: 1, late: 0 });
  });
});

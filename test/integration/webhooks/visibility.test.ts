/**
 * Provider webhooks a user can see and bound (issue 27): a delivery's body is
 * capped before its signature is checked (1 MiB by default, per source); the
 * redeliveries a source absorbed and the signatures refused, by reason, are in
 * /metrics, GET and health; the advisor never proposes less than a provider
 * keeps retrying.
 */
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { call, countingBody, addCredential, createStream, deliverWebhook, json, post } from "../helpers";

const stripe = new Stripe("sk_test_unused", { httpClient: Stripe.createFetchHttpClient() });
const SECRET = "whsec_visibility";
const config = { key: ["id"], eventTime: "time", watermarkDelay: "1 hour", partitions: 2 };
const nowS = () => Math.floor(Date.now() / 1000);
let seq = 0;
const event = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: `evt_vis_${++seq}`,
    object: "event",
    created: nowS() - 60,
    type: "charge.succeeded",
    data: { object: { amount: 100 } },
    pending_webhooks: 1,
    ...extra,
  });
const signed = async (body: string, secret = SECRET, t = nowS()) => ({
  "stripe-signature": await stripe.webhooks.generateTestHeaderStringAsync({ payload: body, secret, timestamp: t }),
});

describe("a webhook body cap of its own", () => {
  it("1 MiB by default, refused before the signature is checked and without reading on; a source may raise it", async () => {
    await createStream("wv-cap", { ...config, sources: { big: { maxWebhookBytes: 2 * 1024 * 1024 } } });
    await addCredential("wv-cap", "main", { type: "stripe", secret: SECRET });
    await addCredential("wv-cap", "big", { type: "stripe", secret: SECRET });
    const large = event({ padding: "x".repeat(1024 * 1024) });
    const r = await deliverWebhook("wv-cap", "main", large, await signed(large));
    expect(r.status).toBe(413);
    expect((await r.json<any>()).detail).toBe(
      "the delivery's body is larger than 1048576 bytes; source \"main\" reads at most 1048576 before checking a webhook signature (sources.main.maxWebhookBytes, default 1 MiB, never above the stream's limits.maxBodyBytes)",
    );
    expect((await deliverWebhook("wv-cap", "big", large, await signed(large))).status).toBe(200);
    // A body of unknown length is cut off at the cap: not read to the stream's 10 MiB.
    const streamed = countingBody("x".repeat(64 * 1024), 160);
    const cut = await deliverWebhook("wv-cap", "main", streamed.body, await signed("whatever"));
    expect(cut.status).toBe(413);
    expect(streamed.seen.pulled).toBeLessThanOrEqual(1024 * 1024 + 2 * 64 * 1024);
  });

  it("a source's maxWebhookBytes is checked with the config", async () => {
    const r = await call("PUT", "/v1/streams/wv-cap-bad", { ...config, sources: { s: { maxWebhookBytes: 10 } } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(await r.json())).toContain("sources.s.maxWebhookBytes");
  });
});

describe("what a webhook source absorbed and refused", () => {
  it("replays and refused signatures, by reason, in /metrics, GET and health, and nothing for a stream that does not exist", async () => {
    await createStream("wv-count", config);
    await addCredential("wv-count", "main", { type: "stripe", secret: SECRET });
    const body = event();
    expect((await deliverWebhook("wv-count", "main", body, await signed(body))).status).toBe(200);
    const again = await deliverWebhook("wv-count", "main", body, await signed(body, SECRET, nowS() + 1));
    expect(await again.json()).toMatchObject({ replayed: true });
    for (let i = 0; i < 6; i++) expect((await deliverWebhook("wv-count", "main", body, await signed(body, "whsec_wrong"))).status).toBe(401);
    expect((await deliverWebhook("wv-count", "main", body, await signed(body, SECRET, nowS() - 3600))).status).toBe(401);
    expect((await deliverWebhook("wv-count", "main", body, { "stripe-signature": "t=1,nothing" })).status).toBe(401);
    expect((await deliverWebhook("wv-nope", "main", body, await signed(body, "whsec_wrong"))).status).toBe(401);
    // The counts reach the Coordinator after the answers, at most every few seconds per source.
    const expected = { replayed: 1, refused: { "bad-signature": 6, stale: 1, malformed: 1 }, rows: 1 };
    await expect.poll(async () => (await json(call("GET", "/v1/streams/wv-count"))).webhooks, { timeout: 10_000, interval: 100 }).toEqual({ main: expected });
    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics).toContain('edge_dedup_webhook_replays_total{stream="wv-count",source="main"} 1\n');
    expect(metrics).toContain('edge_dedup_webhook_signatures_refused_total{stream="wv-count",source="main",reason="bad-signature"} 6\n');
    expect(metrics).toContain('edge_dedup_webhook_signatures_refused_total{stream="wv-count",source="main",reason="stale"} 1\n');
    expect(metrics).not.toContain('stream="wv-nope"');
    const health = await json(call("GET", "/v1/streams/wv-count/health"));
    expect(health.webhooks).toEqual({ main: expected });
    expect(health.reasons).toEqual([
      expect.objectContaining({
        code: "webhook-refusals",
        severity: "warn",
        detail: expect.stringMatching(/^source main: 8 webhook deliveries were refused by their signature \(6 bad-signature, /),
      }),
    ]);
    expect((await call("GET", "/v1/streams/wv-nope")).status).toBe(404);
  });
});

describe("the delay advisor and a provider's retries", () => {
  it("never proposes less than Stripe keeps retrying (3 days) for a Stripe source, and says why", async () => {
    await createStream("wv-advice", config);
    await addCredential("wv-advice", "stripe", { type: "stripe", secret: SECRET });
    for (let i = 0; i < 3; i++) {
      const body = event();
      expect((await deliverWebhook("wv-advice", "stripe", body, await signed(body))).status).toBe(200);
    }
    await post("wv-advice", [{ id: "x", time: Date.now() - 60_000 }], { "x-source": "app" });
    const advice = await json(call("GET", "/v1/streams/wv-advice/advice"));
    expect(advice.sources.stripe.recommendation).toMatchObject({
      watermarkDelay: "3 days",
      delayMs: 3 * 86_400_000,
      floor: { ms: 3 * 86_400_000, reason: expect.stringMatching(/^Stripe retries a failed delivery for up to 3 days/) },
    });
    // The stream's delay serves the Stripe source too: it gets the floor; a source of the producer's own does not.
    expect(advice.overall.recommendation).toMatchObject({
      delayMs: 3 * 86_400_000,
      floor: { reason: expect.stringMatching(/^source stripe: Stripe retries/) },
    });
    expect(advice.sources.app.recommendation.floor).toBeUndefined();
    expect(advice.sources.app.recommendation.delayMs).toBeLessThan(86_400_000);
  });
});

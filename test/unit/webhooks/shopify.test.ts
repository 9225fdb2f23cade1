import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { describe, expect, test } from "vitest";
import { batchIdFor, PROVIDERS, signShopify } from "../../../src/webhooks";
import { conformance, enc, NOW_MS, ok, type Reference } from "./conformance";

/**
 * Shopify publishes no verification library; its docs verify with Node's
 * createHmac("sha256", secret).update(body).digest("base64"), which is the
 * reference here, with RFC 4231's HMAC-SHA256 test case 2 as a fixed vector.
 */
const provider = PROVIDERS.shopify;
const HEADER = "X-Shopify-Hmac-Sha256";
const headersOf = (value: string) => new Headers({ [HEADER]: value });
const nodeHmac = (secret: string, body: string) => createHmac("sha256", secret).update(body, "utf8").digest("base64");

conformance({
  provider,
  secret: (seed) => `shpss_${seed}`,
  theirHeaders: async (secret, body) => headersOf(nodeHmac(secret, body)),
  theyAccept: async (secret, body, headers) => {
    const given = Buffer.from(headers.get(HEADER)!, "base64");
    const expected = createHmac("sha256", secret).update(body, "utf8").digest();
    return given.length === expected.length && timingSafeEqual(given, expected);
  },
  ourHeaders: async (secret, body) => headersOf(await signShopify(secret, body)),
} satisfies Reference);

describe("shopify: the X-Shopify-Hmac-Sha256 header", () => {
  test('RFC 4231 test case 2 (key "Jefe"), as base64', async () => {
    const expected = "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM="; // hex 5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843
    expect(await signShopify("Jefe", "what do ya want for nothing?")).toBe(expected);
    expect(ok(await provider.verify(headersOf(expected), enc("what do ya want for nothing?"), ["Jefe"], NOW_MS))).toBe(0);
  });

  test("no timestamp is signed: any arrival time verifies", async () => {
    const headers = headersOf(await signShopify("s", "{}"));
    expect(ok(await provider.verify(headers, enc("{}"), ["s"], 0))).toBe(0);
    expect(provider.timestamp(headers)).toBeNull();
  });

  test.each(["", "not base64!", "W9zBRr9gdU5qBCQm", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"])(
    "malformed %j is refused before the body",
    async (value) => {
      const reason = "X-Shopify-Hmac-Sha256 must be the base64 of a 32-byte HMAC-SHA256";
      expect(provider.precheck(headersOf(value), NOW_MS)).toEqual({ ok: false, reason });
      expect(ok(await provider.verify(headersOf(value), enc("{}"), ["s"], NOW_MS))).toBe(reason);
    },
  );
});

describe("shopify: the envelope", () => {
  const base = { "X-Shopify-Topic": "orders/create", "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" };
  const order = { id: 820982911946154500, email: "jon@example.com" };
  const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
  const orderHash = sha256(enc(JSON.stringify(order)));
  const envelope = (headers: Record<string, string>, body: unknown = order) => {
    const bytes = enc(JSON.stringify(body));
    return provider.envelope(new Headers(headers), bytes, NOW_MS, sha256(bytes));
  };

  // DESIGN §6 (issue 14): Shopify signs the body alone, so only the body is identity; the headers are kept, unverified.
  test("id = the SHA-256 of the body; deliveryId = X-Shopify-Event-Id; time = X-Shopify-Triggered-At (ns truncated to ms); type = X-Shopify-Topic", () => {
    const headers = { ...base, "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5", "X-Shopify-Triggered-At": "2026-11-30T00:40:27.877041743Z" };
    expect(envelope(headers)).toEqual({
      ok: true,
      row: { id: orderHash, time: Date.UTC(2026, 10, 30, 0, 40, 27, 877), type: "orders/create", deliveryId: headers["X-Shopify-Event-Id"], payload: order },
      identity: orderHash,
    });
  });

  test("without X-Shopify-Event-Id the webhook id is the deliveryId; without Triggered-At the time is the arrival", () => {
    expect(envelope(base)).toMatchObject({ ok: true, row: { id: orderHash, deliveryId: base["X-Shopify-Webhook-Id"], time: NOW_MS }, identity: orderHash });
  });

  test("a Triggered-At later than the arrival is the arrival: an unsigned header never moves the watermark ahead", () => {
    const later = new Date(NOW_MS + 23 * 3600_000).toISOString();
    expect(envelope({ ...base, "X-Shopify-Triggered-At": later })).toMatchObject({ ok: true, row: { time: NOW_MS } });
    expect(envelope({ ...base, "X-Shopify-Triggered-At": new Date(NOW_MS + 1).toISOString() })).toMatchObject({ ok: true, row: { time: NOW_MS } });
  });

  test("another event id, topic or time on the same bytes is the same identity", () => {
    const forged = envelope({ "X-Shopify-Event-Id": "forged", "X-Shopify-Topic": "refunds/create", "X-Shopify-Triggered-At": "2026-11-29T00:00:00Z" });
    expect(forged).toMatchObject({ ok: true, row: { id: orderHash, deliveryId: "forged", type: "refunds/create" }, identity: orderHash });
  });

  test("no id, a Triggered-At that is not ISO-8601, or a body that is not a JSON object, is refused", () => {
    expect(envelope({ "X-Shopify-Topic": "orders/create" })).toEqual({ ok: false, reason: "missing X-Shopify-Event-Id and X-Shopify-Webhook-Id headers" });
    expect(envelope({ ...base, "X-Shopify-Triggered-At": "1796000000" })).toEqual({
      ok: false,
      reason: 'X-Shopify-Triggered-At is not an ISO-8601 time: "1796000000"',
    });
    expect(envelope(base, "text")).toEqual({ ok: false, reason: "the body is not a JSON object" });
  });

  test("the batch id is shopify: + the body's SHA-256", async () => {
    expect(await batchIdFor("shopify", orderHash)).toBe(`shopify:${orderHash}`);
  });
});

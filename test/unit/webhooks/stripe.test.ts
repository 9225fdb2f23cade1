import Stripe from "stripe";
import { describe, expect, test } from "vitest";
import { batchIdFor, PROVIDERS, signStripe } from "../../../src/webhooks";
import { conformance, enc, NOW_MS, UNUSED_HASH, ok, T, timeWindow, type Reference } from "./conformance";

const stripeLib = new Stripe("sk_test_unused");
const provider = PROVIDERS.stripe;
const headersOf = (value: string) => new Headers({ "Stripe-Signature": value });

const reference: Reference = {
  provider,
  secret: (seed) => `whsec_test${seed}`,
  theirHeaders: async (secret, body, t) => headersOf(stripeLib.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: t })),
  theyAccept: async (secret, body, headers, nowMs) => {
    try {
      // The signature check alone: constructEventAsync also JSON-parses, which the property's odd bodies fail.
      await stripeLib.webhooks.signature!.verifyHeaderAsync(body, headers.get("Stripe-Signature")!, secret, 300, undefined, nowMs);
      return true;
    } catch {
      return false;
    }
  },
  ourHeaders: async (secret, body, t) => headersOf(await signStripe(secret, body, t)),
};

conformance(reference);
// Stripe's library refuses only the past side; DESIGN §6 asks for both, so a delivery from 301 s ahead is ours alone to refuse.
timeWindow(reference, "Stripe-Signature t", true);

describe("stripe: the Stripe-Signature header", () => {
  const secret = "whsec_live";
  const body = '{"id":"evt_1"}';
  const good = async () => (await signStripe(secret, body, T)).split(",")[1];
  const verify = async (value: string) => ok(await provider.verify(headersOf(value), enc(body), [secret], NOW_MS));

  test("our signature is Stripe's, to the byte", async () => {
    expect(await signStripe(secret, body, T)).toBe(stripeLib.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: T }));
  });

  test("Stripe's constructEventAsync takes our header and yields the event", async () => {
    const event = await stripeLib.webhooks.constructEventAsync(body, await signStripe(secret, body, T), secret, 300, undefined, NOW_MS);
    expect(event.id).toBe("evt_1");
  });

  test("several v1 (Stripe rolling a secret): one that matches is enough, in any position", async () => {
    const wrong = `v1=${"0".repeat(64)}`;
    for (const value of [`t=${T},${wrong},${await good()}`, `t=${T},${await good()},${wrong}`]) {
      expect(await verify(value)).toBe(0);
      expect(await reference.theyAccept(secret, body, headersOf(value), NOW_MS)).toBe(true);
    }
  });

  test("v0 and unknown schemes are ignored; with no v1 the header is refused", async () => {
    const v1 = await good();
    const v0 = v1.replace("v1=", "v0=");
    expect(await verify(`t=${T},${v0},scheme2=abc,${v1}`)).toBe(0);
    expect(await verify(`t=${T},${v0}`)).toBe("Stripe-Signature has no v1=<64 hex digits> signature (other schemes, such as v0, are not accepted)");
    expect(await reference.theyAccept(secret, body, headersOf(`t=${T},${v0}`), NOW_MS)).toBe(false);
  });

  test("order and spaces do not matter", async () => {
    expect(await verify(`${await good()}, t=${T}`)).toBe(0);
  });

  test.each([
    ["", "Stripe-Signature has no t=<unix seconds>"],
    [`v1=${"a".repeat(64)}`, "Stripe-Signature has no t=<unix seconds>"],
    [`t=${T}`, "Stripe-Signature has no v1=<64 hex digits> signature (other schemes, such as v0, are not accepted)"],
    [`t=${T},v1=zz`, "Stripe-Signature has no v1=<64 hex digits> signature (other schemes, such as v0, are not accepted)"],
    [`t=${T},v1=${"a".repeat(62)}`, "Stripe-Signature has no v1=<64 hex digits> signature (other schemes, such as v0, are not accepted)"],
    [`t=soon,v1=${"a".repeat(64)}`, "Stripe-Signature must carry one t=<unix seconds>"],
    [`t=-5,v1=${"a".repeat(64)}`, "Stripe-Signature must carry one t=<unix seconds>"],
    [`t=${T},t=${T},v1=${"a".repeat(64)}`, "Stripe-Signature must carry one t=<unix seconds>"],
  ])("malformed %j is refused before the body: %s", async (value, reason) => {
    expect(provider.precheck(headersOf(value), NOW_MS)).toEqual({ ok: false, reason });
    expect(await verify(value)).toBe(reason);
  });

  test("the secret is used as text, whsec_ prefix and all (not base64-decoded)", async () => {
    const value = await signStripe("whsec_abc", body, T);
    expect(ok(await provider.verify(headersOf(value), enc(body), ["whsec_abc"], NOW_MS))).toBe(0);
    expect((await provider.verify(headersOf(value), enc(body), ["abc"], NOW_MS)).ok).toBe(false);
  });

  test("precheck needs no body: a stale header is refused, a fresh one passes even for a body that will not verify", async () => {
    const value = await signStripe(secret, body, T);
    expect(provider.precheck(headersOf(value), NOW_MS + 301_000).ok).toBe(false);
    expect(provider.precheck(headersOf(value), NOW_MS)).toEqual({ ok: true });
    expect((await provider.verify(headersOf(value), enc(`${body} `), [secret], NOW_MS)).ok).toBe(false);
  });
});

describe("stripe: the envelope", () => {
  const event = { id: "evt_1Nq", object: "event", created: 1_796_000_123, type: "invoice.paid", data: { object: { id: "in_1" } }, pending_webhooks: 1 };
  const envelope = (body: unknown) => provider.envelope(new Headers(), enc(typeof body === "string" ? body : JSON.stringify(body)), NOW_MS, UNUSED_HASH);

  test("id and type from the event, created (unix seconds) as ms, the whole event as payload", () => {
    expect(envelope(event)).toEqual({ ok: true, row: { id: "evt_1Nq", time: 1_796_000_123_000, type: "invoice.paid", payload: event }, identity: "evt_1Nq" });
  });

  test("the time is the event's, not the arrival's", () => {
    expect(provider.envelope(new Headers(), enc(JSON.stringify(event)), 0, UNUSED_HASH)).toMatchObject({ row: { time: 1_796_000_123_000 } });
  });

  test("a missing type is null; a missing id or created, or a body that is not a JSON object, is refused", () => {
    expect(envelope({ ...event, type: undefined })).toMatchObject({ ok: true, row: { type: null } });
    expect(envelope({ ...event, id: undefined })).toEqual({ ok: false, reason: 'the Stripe event has no "id"' });
    expect(envelope({ ...event, id: "" })).toEqual({ ok: false, reason: 'the Stripe event has no "id"' });
    expect(envelope({ ...event, created: "1796000123" })).toEqual({ ok: false, reason: 'the Stripe event has no "created" (unix seconds)' });
    expect(envelope({ ...event, created: 1.5 })).toEqual({ ok: false, reason: 'the Stripe event has no "created" (unix seconds)' });
    expect(envelope("not json")).toMatchObject({ ok: false, reason: expect.stringMatching(/^the body is not valid JSON/) });
    expect(envelope([event])).toEqual({ ok: false, reason: "the body is not a JSON object" });
  });

  test("the batch id is the event id", async () => {
    expect(await batchIdFor("stripe", "evt_1Nq")).toBe("stripe:evt_1Nq");
  });
});

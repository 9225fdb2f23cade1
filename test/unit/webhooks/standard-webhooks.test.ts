import { Webhook } from "standardwebhooks";
import { describe, expect, test, vi } from "vitest";
import { batchIdFor, PROVIDERS, signStandardWebhooks, standardWebhooksKey } from "../../../src/webhooks";
import { conformance, enc, NOW_MS, UNUSED_HASH, ok, T, timeWindow, type Reference } from "./conformance";

const provider = PROVIDERS["standard-webhooks"];
const ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
const secretOf = (seed: number) => `whsec_${btoa(String.fromCharCode(...Array.from({ length: 24 }, (_, i) => (seed * 31 + i * 7) % 256)))}`;
const headersOf = (signature: string, t = T, id = ID) => new Headers({ "webhook-id": id, "webhook-timestamp": String(t), "webhook-signature": signature });

/** The reference library reads the clock itself; run it at `nowMs`. */
function at<R>(nowMs: number, run: () => R): R {
  vi.useFakeTimers({ toFake: ["Date"], now: nowMs });
  try {
    return run();
  } finally {
    vi.useRealTimers();
  }
}

function record(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => (out[name] = value));
  return out;
}

const reference: Reference = {
  provider,
  secret: secretOf,
  theirHeaders: async (secret, body, t) => headersOf(new Webhook(secret).sign(ID, new Date(t * 1000), body), t),
  theyAccept: async (secret, body, headers, nowMs) =>
    at(nowMs, () => {
      try {
        new Webhook(secret).verify(body, record(headers), { jsonParse: false });
        return true;
      } catch {
        return false;
      }
    }),
  ourHeaders: async (secret, body, t) => headersOf(await signStandardWebhooks(secret, ID, t, body), t),
};

conformance(reference);
timeWindow(reference, "webhook-timestamp", false);

describe("standard-webhooks: the signature headers", () => {
  const secret = secretOf(1);
  const body = '{"type":"invoice.paid"}';
  const sig = () => signStandardWebhooks(secret, ID, T, body);
  const verify = async (headers: Headers) => ok(await provider.verify(headers, enc(body), [secret], NOW_MS));

  test("the specification's test vector", async () => {
    const vector = { secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek", t: 1614265330, body: '{"test": 2432232314}' };
    const expected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    expect(await signStandardWebhooks(vector.secret, vector.id, vector.t, vector.body)).toBe(expected);
    const headers = headersOf(expected, vector.t, vector.id);
    expect(ok(await provider.verify(headers, enc(vector.body), [vector.secret], vector.t * 1000))).toBe(0);
  });

  test("several signatures, space-separated: one that matches is enough; v1a and other versions are ignored", async () => {
    const good = await sig();
    const other = await signStandardWebhooks(secretOf(9), ID, T, body);
    const v1a = `v1a,${good.slice(3)}`;
    for (const value of [`${other} ${good}`, `${good} ${other}`, `${v1a} ${good}`]) {
      expect(await verify(headersOf(value))).toBe(0);
      expect(await reference.theyAccept(secret, body, headersOf(value), NOW_MS)).toBe(true);
    }
    const onlyV1a = headersOf(v1a);
    expect(await verify(onlyV1a)).toBe("webhook-signature has no v1,<base64> signature (other versions, such as v1a, are not accepted)");
    expect(await reference.theyAccept(secret, body, onlyV1a, NOW_MS)).toBe(false);
  });

  test("the id and the timestamp are signed: changing either is refused, by it and by us", async () => {
    for (const headers of [headersOf(await sig(), T + 1), headersOf(await sig(), T, "msg_other")]) {
      expect(await verify(headers)).toMatch(/does not match this body/);
      expect(await reference.theyAccept(secret, body, headers, NOW_MS)).toBe(false);
    }
  });

  test("Svix's branded svix-* headers are read when webhook-* are absent", async () => {
    const headers = new Headers({ "svix-id": ID, "svix-timestamp": String(T), "svix-signature": await sig() });
    expect(await verify(headers)).toBe(0);
    expect(provider.timestamp(headers)).toBe(T);
  });

  test.each<[Record<string, string>, string]>([
    [{ "webhook-timestamp": String(T), "webhook-signature": "v1,x" }, "missing webhook-id header"],
    [{ "webhook-id": ID }, "missing webhook-timestamp, webhook-signature headers"],
    [{ "webhook-id": ID, "webhook-timestamp": "soon", "webhook-signature": "v1,x" }, "webhook-timestamp must be unix seconds"],
    [{ "webhook-id": ID, "webhook-timestamp": `${T}.5`, "webhook-signature": "v1,x" }, "webhook-timestamp must be unix seconds"],
    [
      { "webhook-id": ID, "webhook-timestamp": String(T), "webhook-signature": "v1,not base64!" },
      "webhook-signature has no v1,<base64> signature (other versions, such as v1a, are not accepted)",
    ],
    [
      { "webhook-id": ID, "webhook-timestamp": String(T), "webhook-signature": "v1,c2hvcnQ=" },
      "webhook-signature has no v1,<base64> signature (other versions, such as v1a, are not accepted)",
    ],
  ])("malformed %j is refused before the body", async (headers, reason) => {
    expect(provider.precheck(new Headers(headers), NOW_MS)).toEqual({ ok: false, reason });
    expect(await verify(new Headers(headers))).toBe(reason);
  });

  test("the key is the base64 after whsec_ (the prefix is optional, as in the reference library)", async () => {
    const bare = secret.slice("whsec_".length);
    expect(standardWebhooksKey(bare)).toEqual(standardWebhooksKey(secret));
    expect(ok(await provider.verify(headersOf(await sig()), enc(body), [bare], NOW_MS))).toBe(0);
    expect(provider.secretProblem("whsec_")).toBe("the secret must be whsec_<base64 of the key>");
    expect(provider.secretProblem("whsec_not base64!")).toBe("the secret must be whsec_<base64 of the key>");
    await expect(signStandardWebhooks("whsec_", ID, T, body)).rejects.toThrow(/whsec_<base64>/);
  });
});

describe("standard-webhooks: the envelope", () => {
  const envelope = (body: Record<string, unknown>, headers = { "webhook-id": ID, "webhook-timestamp": String(T) }) =>
    provider.envelope(new Headers(headers), enc(JSON.stringify(body)), NOW_MS + 12_345, UNUSED_HASH);

  test("id = webhook-id, type = body type, time = body timestamp when ISO-8601", () => {
    const body = { type: "invoice.paid", timestamp: "2022-11-03T20:26:10.344522Z", data: { id: "in_1" } };
    expect(envelope(body)).toEqual({
      ok: true,
      row: { id: ID, time: Date.UTC(2022, 10, 3, 20, 26, 10, 344), type: "invoice.paid", payload: body },
      identity: ID,
    });
  });

  test.each<[string, unknown, number]>([
    ["an epoch-ms number", 1_700_000_000_123, 1_700_000_000_123],
    ["epoch seconds (not ms): the header instead", 1_700_000_000, T * 1000],
    ["a fraction of ms: the header instead", 1_700_000_000_123.5, T * 1000],
    ["a digit string (not ISO): the header instead", "1700000000123", T * 1000],
    ["not a time: the header instead", "yesterday", T * 1000],
    ["absent: the header", undefined, T * 1000],
  ])("body timestamp %s", (_name, timestamp, time) => {
    expect(envelope({ type: "x", timestamp })).toMatchObject({ ok: true, row: { time } });
  });

  test("no webhook-id, no usable time, or a body that is not a JSON object, is refused", () => {
    expect(envelope({ type: "x" }, { "webhook-timestamp": String(T) } as never)).toEqual({ ok: false, reason: "missing webhook-id header" });
    expect(envelope({ type: "x" }, { "webhook-id": ID } as never)).toEqual({
      ok: false,
      reason: 'no event time: the body has no ISO-8601 or epoch-ms "timestamp" and webhook-timestamp is not unix seconds',
    });
    expect(provider.envelope(new Headers({ "webhook-id": ID, "webhook-timestamp": String(T) }), enc("null"), NOW_MS, UNUSED_HASH)).toEqual({
      ok: false,
      reason: "the body is not a JSON object",
    });
  });

  test("the batch id is the message id, which retries keep", async () => {
    expect(await batchIdFor("standard-webhooks", ID)).toBe(`standard-webhooks:${ID}`);
  });
});

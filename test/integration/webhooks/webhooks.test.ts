/**
 * Webhooks straight from providers (issue 8, DESIGN §6), through HTTP inside
 * workerd. Deliveries are signed by each provider's reference implementation
 * where there is one (stripe, @octokit/webhooks-methods, standardwebhooks all
 * load in workerd); Shopify publishes none, so it is signed with our own
 * helper, which test/unit/webhooks/shopify.test.ts checks against Shopify's
 * documented algorithm.
 */
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../src/api/app";
import { signShopify, type ProviderType } from "../../../src/webhooks";
import { call, countingBody, createStream, json, output } from "../helpers";

const stripe = new Stripe("sk_test_unused", { httpClient: Stripe.createFetchHttpClient() });
const config = { key: ["id"], eventTime: "time", watermarkDelay: "1 hour", partitions: 2 };
const nowS = () => Math.floor(Date.now() / 1000);
const hookUrl = (stream: string, source: string) => `http://edge-dedup.test/v1/streams/${stream}/sources/${source}/webhook`;

interface Event {
  id: string;
  /** epoch ms, whole seconds */
  time: number;
  type: string;
}

interface Case {
  type: ProviderType;
  secret(seed: number): string;
  /** the body the provider sends for an event */
  body(e: Event): string;
  /** the headers the provider sends: signed by its reference implementation at t (unix s) */
  sign(secret: string, body: string, e: Event, t: number): Promise<Record<string, string>>;
  /** whether the scheme signs a timestamp (a stale one is refused) */
  timestamped: boolean;
  /** whether the scheme signs the event id (Stripe, Standard Webhooks); else the row id is the body's SHA-256 (DESIGN §6) */
  signsId: boolean;
  /** the envelope's time: the event's, or the arrival (GitHub) */
  eventTime: boolean;
}

const b64 = (seed: number) => btoa(String.fromCharCode(...Array.from({ length: 24 }, (_, i) => (seed * 37 + i * 11) % 256)));

const CASES: Case[] = [
  {
    type: "stripe",
    secret: (seed) => `whsec_stripe_test_${seed}`,
    body: (e) => JSON.stringify({ id: e.id, object: "event", created: e.time / 1000, type: e.type, data: { object: { amount: 2000 } }, pending_webhooks: 1 }),
    sign: async (secret, body, _e, t) => ({ "stripe-signature": await stripe.webhooks.generateTestHeaderStringAsync({ payload: body, secret, timestamp: t }) }),
    timestamped: true,
    signsId: true,
    eventTime: true,
  },
  {
    type: "github",
    secret: (seed) => `It's a Secret to Everybody ${seed}`,
    body: (e) => JSON.stringify({ action: "opened", number: 1, pull_request: { node_id: e.id }, repository: { full_name: "octo/hello" } }),
    sign: async (secret, body, e) => ({
      "x-github-delivery": e.id,
      "x-github-event": e.type,
      "x-hub-signature-256": await githubSign(secret, body),
    }),
    timestamped: false,
    signsId: false,
    eventTime: false,
  },
  {
    type: "shopify",
    secret: (seed) => `shpss_client_secret_${seed}`,
    body: (e) => JSON.stringify({ id: 820982911946154500, admin_graphql_api_id: `gid://shopify/Order/${e.id}`, total_price: "10.00" }),
    sign: async (secret, body, e) => ({
      "x-shopify-event-id": e.id,
      "x-shopify-webhook-id": crypto.randomUUID(),
      "x-shopify-topic": e.type,
      "x-shopify-triggered-at": new Date(e.time).toISOString(),
      "x-shopify-hmac-sha256": await signShopify(secret, body),
    }),
    timestamped: false,
    signsId: false,
    eventTime: true,
  },
  {
    type: "standard-webhooks",
    secret: (seed) => `whsec_${b64(seed)}`,
    body: (e) => JSON.stringify({ type: e.type, timestamp: new Date(e.time).toISOString(), data: { invoice: "in_1" } }),
    sign: async (secret, body, e, t) => ({
      "webhook-id": e.id,
      "webhook-timestamp": String(t),
      "webhook-signature": new Webhook(secret).sign(e.id, new Date(t * 1000), body),
    }),
    timestamped: true,
    signsId: true,
    eventTime: true,
  },
];

const sha256 = async (text: string) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))), (b) => b.toString(16).padStart(2, "0")).join("");
/** The row id of a delivery: the signed event id, or (GitHub, Shopify) the SHA-256 of the signed body. */
const rowId = async (p: Case, e: Event, body: string) => (p.signsId ? e.id : sha256(body));

function deliver(stream: string, source: string, body: string | ReadableStream, headers: Record<string, string>) {
  return exports.default.fetch(hookUrl(stream, source), { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
}

async function credential(stream: string, source: string, body: Record<string, unknown>) {
  const r = await call("POST", `/v1/streams/${stream}/sources/${source}/credentials`, body);
  expect(r.status, await r.clone().text()).toBe(201);
  return r.json<any>();
}

/** Straight into the app, so that the test holds the body stream. */
function direct(stream: string, source: string, body: ReadableStream, headers: Record<string, string>) {
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  return app.fetch(new Request(hookUrl(stream, source), { method: "POST", body, headers, duplex: "half" } as RequestInit), env, ctx);
}

let seq = 0;
const event = (type = "thing.happened"): Event => ({ id: `evt_${++seq}_${crypto.randomUUID().slice(0, 8)}`, time: (nowS() - 120) * 1000, type });

describe.each(CASES)("$type webhooks", (p) => {
  const stream = `wh-${p.type}`;
  const [A, B] = [p.secret(1), p.secret(2)];
  let ready: Promise<void> | undefined;
  /** The stream, with source "main" holding secret A. */
  const setUp = () =>
    (ready ??= (async () => {
      await createStream(stream, config);
      await credential(stream, "main", { type: p.type, secret: A });
    })());

  it("a delivery signed by the provider becomes one envelope row; the same delivery again is a replay", async () => {
    await setUp();
    const e = event("order.paid");
    const body = p.body(e);
    const id = await rowId(p, e, body);
    const r = await deliver(stream, "main", body, await p.sign(A, body, e, nowS()));
    expect(r.status, await r.clone().text()).toBe(200);
    expect(r.headers.get("idempotency-key")).toBe(`${p.type}:${id}`);
    expect(await r.json()).toMatchObject({ batchId: `${p.type}:${id}`, source: "main", replayed: false, input: 1, emitted: 1 });

    // A retry: a new timestamp and signature (and for Stripe, other bytes) — the same batch.
    const again = p.type === "stripe" ? body.replace('"pending_webhooks":1', '"pending_webhooks":0') : body;
    const retry = await deliver(stream, "main", again, await p.sign(A, again, e, nowS() + 1));
    expect(retry.status, await retry.clone().text()).toBe(200);
    expect(await retry.json()).toMatchObject({ batchId: `${p.type}:${id}`, replayed: true, emitted: 1 });

    const rows = (await output(stream)).filter((row) => row.id === id);
    // GitHub and Shopify: the delivery id header is kept, unverified, as deliveryId (DESIGN §6).
    const deliveryId = p.signsId ? {} : { deliveryId: e.id };
    expect(rows).toEqual([{ id, time: p.eventTime ? e.time : expect.any(Number), type: "order.paid", ...deliveryId, payload: JSON.parse(body) }]);
    if (!p.eventTime) expect(Math.abs(rows[0].time - Date.now())).toBeLessThan(60_000);
  });

  it("the same event through another source of the stream is a duplicate: 200, no second row", async () => {
    await setUp();
    await credential(stream, "mirror", { type: p.type, secret: B });
    const e = event();
    const body = p.body(e);
    expect((await deliver(stream, "main", body, await p.sign(A, body, e, nowS()))).status).toBe(200);
    const dup = await deliver(stream, "mirror", body, await p.sign(B, body, e, nowS()));
    expect(dup.status, await dup.clone().text()).toBe(200);
    expect(await dup.json()).toMatchObject({ source: "mirror", replayed: false, emitted: 0, duplicates: 1 });
    expect((await output(stream)).filter((row) => row.id === e.id || row.deliveryId === e.id)).toHaveLength(1);
  });

  it("a tampered body, a wrong secret, a source without the credential: 401 problem+json, nothing applied", async () => {
    await setUp();
    const e = event();
    const body = p.body(e);
    const signed = await p.sign(A, body, e, nowS());
    const tampered = await deliver(stream, "main", body.replace("}", ',"x":1}'), signed);
    expect(tampered.status).toBe(401);
    expect(tampered.headers.get("content-type")).toBe("application/problem+json");
    const problem = await tampered.json<any>();
    expect(problem).toMatchObject({ type: "https://edge-dedup.dev/problems/invalid-webhook-signature", status: 401 });
    expect(problem.detail).toMatch(/does not match any webhook signing secret of source "main"/);
    const wrong = await deliver(stream, "main", body, await p.sign(p.secret(99), body, e, nowS()));
    expect(wrong.status).toBe(401);
    // No hint whether the stream or the source exists: the same answer as a wrong secret.
    const elsewhere = await deliver(stream, "nobody", body, signed);
    expect(elsewhere.status).toBe(401);
    expect((await elsewhere.json<any>()).detail).toBe(problem.detail.replace('"main"', '"nobody"'));
    const missing = await deliver("wh-no-such-stream", "main", body, signed);
    expect(missing.status).toBe(401);
    expect((await missing.json<any>()).detail).toBe(problem.detail);
    expect((await output(stream)).some((row) => row.id === e.id || row.deliveryId === e.id)).toBe(false);
  });

  it(
    p.timestamped
      ? "a stale signature is refused on both sides of now (300 s)"
      : "no signed timestamp: an old signature still verifies, and the body's hash makes it a replay",
    async () => {
      await setUp();
      if (!p.timestamped) {
        // GitHub and Shopify sign no time: a captured delivery verifies whenever it is re-sent,
        // so what protects the stream is its batch id, derived from the signed body.
        const e = event();
        const body = p.body(e);
        const signature = await p.sign(A, body, e, nowS() - 3600);
        expect(await (await deliver(stream, "main", body, signature)).json()).toMatchObject({ replayed: false, emitted: 1 });
        expect(await (await deliver(stream, "main", body, signature)).json()).toMatchObject({ replayed: true, emitted: 1 });
        expect((await output(stream)).filter((row) => row.id === e.id || row.deliveryId === e.id)).toHaveLength(1);
        return;
      }
      const e = event();
      const body = p.body(e);
      const old = await deliver(stream, "main", body, await p.sign(A, body, e, nowS() - 301));
      expect(old.status).toBe(401);
      expect((await old.json<any>()).detail).toMatch(/s old; at most 300 s/);
      const ahead = await deliver(stream, "main", body, await p.sign(A, body, e, nowS() + 301));
      expect(ahead.status).toBe(401);
      expect((await ahead.json<any>()).detail).toMatch(/in the future; at most 300 s/);
      expect((await deliver(stream, "main", body, await p.sign(A, body, e, nowS() - 290))).status).toBe(200);
    },
  );

  it("rotation: two live secrets both verify; a deleted one stops working", async () => {
    const s = `${stream}-rot`;
    await createStream(s, config);
    const old = await credential(s, "main", { type: p.type, secret: A });
    const next = await credential(s, "main", { type: p.type, secret: B });
    expect(next).toMatchObject({ type: p.type, secret: B });
    const listed = await json(call("GET", `/v1/streams/${s}/sources/main/credentials`));
    expect(listed.credentials.map((c: any) => [c.id, c.type])).toEqual([
      [old.id, p.type],
      [next.id, p.type],
    ]);
    for (const c of listed.credentials) expect(c).not.toHaveProperty("secret");
    const stored = await runInDurableObject(env.COORDINATOR.getByName(s), (_o, state) =>
      state.storage.sql
        .exec<{ material: string }>("SELECT material FROM credentials")
        .toArray()
        .map((r) => r.material),
    );
    for (const m of stored) expect(`${m} ${atob(m)}`).not.toContain(A.slice(6));

    for (const secret of [A, B]) {
      const e = event();
      const body = p.body(e);
      const r = await deliver(s, "main", body, await p.sign(secret, body, e, nowS()));
      expect(r.status, await r.clone().text()).toBe(200);
    }
    expect((await call("DELETE", `/v1/streams/${s}/sources/main/credentials/${old.id}`)).status).toBe(204);
    const e = event();
    const body = p.body(e);
    // Refused at once: the Coordinator's admission re-checks the credential by id; the same 401 as a wrong secret, even while this
    // isolate's admission cache still holds it (issue 14: it was a 403 "the token is not valid" then).
    const revoked = await deliver(s, "main", body, await p.sign(A, body, e, nowS()));
    expect(revoked.status).toBe(401);
    expect(await revoked.json()).toMatchObject({
      type: "https://edge-dedup.dev/problems/invalid-webhook-signature",
      detail: expect.stringMatching(/does not match any webhook signing secret of source "main"/),
    });
    expect((await deliver(s, "main", body, await p.sign(B, body, e, nowS()))).status).toBe(200);
  });

  it("nothing of the body is read when the headers fail: no signature, or a source without credentials", async () => {
    await setUp();
    const e = event();
    const signed = await p.sign(A, p.body(e), e, nowS());
    const unsigned = countingBody("x".repeat(64 * 1024), 512); // 32 MiB if read
    const r = await direct(stream, "main", unsigned.body, { "content-type": "application/json" });
    expect(r.status).toBe(401);
    expect((await r.json<any>()).detail).toMatch(/no provider signature: send one of Stripe-Signature, X-Hub-Signature-256/);
    expect(unsigned.seen.pulled).toBeLessThanOrEqual(64 * 1024);
    const stranger = countingBody("x".repeat(64 * 1024), 512);
    expect((await direct(stream, "nobody", stranger.body, signed)).status).toBe(401);
    expect(stranger.seen.pulled).toBeLessThanOrEqual(64 * 1024);
    if (p.timestamped) {
      const stale = countingBody("x".repeat(64 * 1024), 512);
      expect((await direct(stream, "main", stale.body, await p.sign(A, p.body(e), e, nowS() - 3600))).status).toBe(401);
      expect(stale.seen.pulled).toBeLessThanOrEqual(64 * 1024);
    }
  });

  it("a verified delivery that cannot become a row is a 400", async () => {
    await setUp();
    const e = event();
    for (const body of ["not json", "[1,2]"]) {
      const r = await deliver(stream, "main", body, await p.sign(A, body, e, nowS()));
      expect(r.status).toBe(400);
      const problem = await r.json<any>();
      expect(problem.type).toBe("https://edge-dedup.dev/problems/invalid-webhook");
      expect(problem.detail).toMatch(/cannot become a row: the body is not (valid JSON|a JSON object)/);
    }
  });
});

describe("provider credentials", () => {
  it("need the provider's secret in its format; a source's webhook credentials are of one provider", async () => {
    await createStream("wh-creds", config);
    const bad = async (body: Record<string, unknown>, message: RegExp) => {
      const r = await call("POST", "/v1/streams/wh-creds/sources/s/credentials", body);
      expect(r.status).toBe(400);
      expect(JSON.stringify(await r.json())).toMatch(message);
    };
    await bad({ type: "standard-webhooks", secret: "whsec_not base64!" }, /whsec_<base64 of the key>/);
    await bad({ type: "stripe" }, /a stripe credential needs the provider's signing secret/);
    await bad({ type: "github", secret: "" }, /the secret is empty/);
    await bad({ type: "hmac", secret: "short" }, /at least 24 characters/);
    await bad({ type: "paypal", secret: "x" }, /type/);

    await credential("wh-creds", "s", { type: "stripe", secret: "whsec_one" });
    await credential("wh-creds", "s", { type: "stripe", secret: "whsec_two" });
    await credential("wh-creds", "s", { type: "hmac" }); // our own signatures may sit alongside
    const other = await call("POST", "/v1/streams/wh-creds/sources/s/credentials", { type: "github", secret: "gh" });
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ type: "https://edge-dedup.dev/problems/credential-provider-mismatch" });
    await credential("wh-creds", "t", { type: "github", secret: "gh" });
  });

  it("a provider secret is not an X-Signature secret, nor the other way round", async () => {
    await createStream("wh-cross", config);
    const secret = "a-secret-for-both-kinds-of-credential";
    await credential("wh-cross", "hooks", { type: "hmac", secret });
    const e = event();
    const body = CASES[1].body(e);
    const r = await deliver("wh-cross", "hooks", body, await CASES[1].sign(secret, body, e, nowS()));
    expect(r.status).toBe(401);
  });
});

describe("the webhook endpoint", () => {
  it("signed as another provider than the source's is the same 401 as a wrong secret", async () => {
    await createStream("wh-mixed", config);
    await credential("wh-mixed", "main", { type: "stripe", secret: "whsec_mixed" });
    const e = event();
    const body = CASES[2].body(e);
    const r = await deliver("wh-mixed", "main", body, await CASES[2].sign("whsec_mixed", body, e, nowS()));
    expect(r.status).toBe(401);
    expect((await r.json<any>()).detail).toMatch(/does not match any webhook signing secret of source "main"/);
  });

  it("several signatures: one that matches is enough (Stripe and Standard Webhooks rolling a secret)", async () => {
    await createStream("wh-several", config);
    await credential("wh-several", "st", { type: "stripe", secret: "whsec_several" });
    await credential("wh-several", "sw", { type: "standard-webhooks", secret: CASES[3].secret(7) });
    const [stripeCase, swCase] = [CASES[0], CASES[3]];

    const e1 = event();
    const b1 = stripeCase.body(e1);
    const t = nowS();
    const right = (await stripeCase.sign("whsec_several", b1, e1, t))["stripe-signature"].split(",")[1];
    const several = { "stripe-signature": `t=${t},v1=${"0".repeat(64)},${right},v0=${"1".repeat(64)}` };
    expect((await deliver("wh-several", "st", b1, several)).status).toBe(200);
    expect((await deliver("wh-several", "st", b1, { "stripe-signature": `t=${t},v1=${"0".repeat(64)}` })).status).toBe(401);

    const e2 = event();
    const b2 = swCase.body(e2);
    const h = await swCase.sign(CASES[3].secret(7), b2, e2, t);
    const wrong = new Webhook(CASES[3].secret(8)).sign(e2.id, new Date(t * 1000), b2);
    const r = await deliver("wh-several", "sw", b2, { ...h, "webhook-signature": `${wrong} v1a,xyz ${h["webhook-signature"]}` });
    expect(r.status, await r.clone().text()).toBe(200);
    // Svix's branded headers are read as well.
    const e3 = event();
    const b3 = swCase.body(e3);
    const h3 = await swCase.sign(CASES[3].secret(7), b3, e3, t);
    const svix = { "svix-id": h3["webhook-id"], "svix-timestamp": h3["webhook-timestamp"], "svix-signature": h3["webhook-signature"] };
    expect((await deliver("wh-several", "sw", b3, svix)).status).toBe(200);
  });

  it("GitHub's SHA-1 signature alone is refused, saying so", async () => {
    const r = await deliver("wh-github", "main", "{}", { "x-hub-signature": "sha1=0000", "x-github-delivery": "d1" });
    expect(r.status).toBe(401);
    expect((await r.json<any>()).detail).toMatch(/the SHA-1 X-Hub-Signature is not accepted/);
  });

  // Issue 14: a disabled source was a 403 "source … is disabled" before any signature check, which told anyone
  // that the source exists; now it is the same 401 as a wrong signature, with or without a right one.
  it("a disabled source is the same 401 as a wrong signature; a body over the stream's limit a 413; the admin routes stay closed", async () => {
    await createStream("wh-limits", { ...config, limits: { maxBodyBytes: 1024 }, sources: { off: { disabled: true } } });
    await credential("wh-limits", "main", { type: "stripe", secret: "whsec_limits" });
    await credential("wh-limits", "off", { type: "stripe", secret: "whsec_limits" });
    const e = event();
    const small = CASES[0].body(e);
    const disabled = await deliver("wh-limits", "off", small, await CASES[0].sign("whsec_limits", small, e, nowS()));
    expect(disabled.status).toBe(401);
    const unknown = await deliver("wh-limits", "nobody", small, await CASES[0].sign("whsec_limits", small, e, nowS()));
    const wrong = await deliver("wh-limits", "off", small, await CASES[0].sign("whsec_wrong", small, e, nowS()));
    for (const r of [unknown, wrong]) expect(r.status).toBe(401);
    const [d, u, w] = [await disabled.json<any>(), await unknown.json<any>(), await wrong.json<any>()];
    expect(d.type).toBe("https://edge-dedup.dev/problems/invalid-webhook-signature");
    expect(d.detail).toBe(w.detail);
    expect(d.detail).toBe(u.detail.replace('"nobody"', '"off"'));
    const big = JSON.stringify({ ...JSON.parse(small), padding: "x".repeat(2048) });
    const tooBig = await deliver("wh-limits", "main", big, await CASES[0].sign("whsec_limits", big, e, nowS()));
    expect(tooBig.status).toBe(413);
    expect((await tooBig.json<any>()).detail).toMatch(/at most 1024/);
    expect((await deliver("wh-limits", "main", small, await CASES[0].sign("whsec_limits", small, e, nowS()))).status).toBe(200);
    // The webhook route opens POST …/webhook only.
    const get = await exports.default.fetch(hookUrl("wh-limits", "main"));
    expect(get.status).toBe(401);
    expect((await call("GET", "/v1/streams/wh-limits/sources/main/webhook")).status).toBe(405);
    // A source name that can't be is a 400 for a signed delivery; an unsigned one is refused before its names are looked at (route.ts, AUTH).
    expect((await deliver("wh-limits", "bad name!", small, await CASES[0].sign("whsec_limits", small, e, nowS()))).status).toBe(400);
    expect((await deliver("wh-limits", "bad name!", small, {})).status).toBe(401);
  });
});

/**
 * Issue 14: GitHub and Shopify sign the body alone, so a captured delivery can
 * be re-sent by anyone with any headers. Only signed bytes are identity
 * (DESIGN §6): such a replay adds no row and moves no watermark.
 */
describe.each(CASES.filter((c) => !c.signsId))("$type: a captured delivery re-sent with other headers", (p) => {
  const streamOf = (name: string) => `wh-forge-${p.type}-${name}`;
  const secret = p.secret(7);
  const sourceOf = async (stream: string) => (await json(call("GET", `/v1/streams/${stream}`))) as any;

  /** The headers of `signed` with the provider's unsigned ones changed. */
  const forge = (signed: Record<string, string>, changes: Record<string, string>) => ({ ...signed, ...changes });
  const idHeader = p.type === "github" ? "x-github-delivery" : "x-shopify-event-id";
  const typeHeader = p.type === "github" ? "x-github-event" : "x-shopify-topic";

  it("a new delivery id, a new type, (Shopify) a Triggered-At in the future: a replay each time, no new row, the watermark unchanged", async () => {
    const stream = streamOf("a");
    await createStream(stream, config);
    await credential(stream, "main", { type: p.type, secret });
    const e = event("order.paid");
    const body = p.body(e);
    const signed = await p.sign(secret, body, e, nowS());
    const first = await deliver(stream, "main", body, signed);
    expect(first.status, await first.clone().text()).toBe(200);
    const genuine = await first.json<any>();
    expect(genuine).toMatchObject({ replayed: false, emitted: 1, batchId: `${p.type}:${await sha256(body)}` });
    const before = await sourceOf(stream);

    const forgeries: Record<string, string>[] = [
      { [idHeader]: "forged-delivery-1" },
      { [idHeader]: crypto.randomUUID(), [typeHeader]: "refunds.create" },
      ...(p.type === "shopify"
        ? [
            { "x-shopify-event-id": "forged-2", "x-shopify-triggered-at": new Date(Date.now() + 23 * 3600_000).toISOString() },
            {
              "x-shopify-event-id": "forged-3",
              "x-shopify-webhook-id": "forged-3",
              "x-shopify-triggered-at": new Date(Date.now() - 3 * 3600_000).toISOString(),
            },
          ]
        : []),
    ];
    for (const changes of forgeries) {
      const r = await deliver(stream, "main", body, forge(signed, changes));
      expect(r.status, await r.clone().text()).toBe(200);
      expect(await r.json()).toMatchObject({ batchId: genuine.batchId, replayed: true, emitted: 1 });
    }
    const after = await sourceOf(stream);
    expect(after.watermark).toBe(before.watermark);
    expect(after.sources).toEqual(before.sources);
    expect(after.batches.committed).toBe(before.batches.committed);
    const rows = await output(stream);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: await sha256(body), deliveryId: e.id, type: "order.paid" });

    // The next genuine delivery is on time, not late: nothing forged moved the watermark.
    const next = event("order.paid");
    const nextBody = p.body(next);
    const r = await deliver(stream, "main", nextBody, await p.sign(secret, nextBody, next, nowS()));
    expect(await r.json()).toMatchObject({ replayed: false, emitted: 1, late: 0 });
  });

  it("a first delivery whose headers put it in the future is timed no later than its arrival", async () => {
    const stream = streamOf("b");
    await createStream(stream, config);
    await credential(stream, "main", { type: p.type, secret });
    const e = { ...event(), time: Date.now() + 23 * 3600_000 };
    const body = p.body(e);
    const arrival = Date.now();
    const r = await deliver(stream, "main", body, await p.sign(secret, body, e, nowS()));
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await r.json()).toMatchObject({ emitted: 1 });
    const [row] = await output(stream);
    expect(row.time).toBeGreaterThanOrEqual(arrival);
    expect(row.time).toBeLessThanOrEqual(Date.now());
    const info = await sourceOf(stream);
    expect(info.sources.main.maxEventTime).toBeLessThanOrEqual(Date.now());
  });
});

/** Issue 14: one depth limit (64) for every JSON the service parses; errors say where, never the bytes. */
describe("webhook payloads: depth and error texts", () => {
  const p = CASES.find((c) => c.type === "github")!;
  const secret = p.secret(8);
  const setUp = async (stream: string) => {
    await createStream(stream, config);
    await credential(stream, "main", { type: p.type, secret });
  };

  it("a payload nested 20,000 deep is a 400 problem, not a 500; 64 deep is accepted", async () => {
    await setUp("wh-deep");
    for (const [depth, status] of [
      [20_000, 400],
      [65, 400],
      [64, 200],
    ] as const) {
      const body = `${"[".repeat(depth - 1)}`.replace(/^/, '{"a":') + "]".repeat(depth - 1) + "}";
      const e = event();
      const r = await deliver("wh-deep", "main", body, await p.sign(secret, body, e, nowS()));
      expect(r.status, `${depth}: ${await r.clone().text()}`).toBe(status);
      if (status === 400) expect((await r.json<any>()).detail).toMatch(/more than 64 levels deep/);
    }
  });

  it("a payload that is not JSON is refused without quoting it", async () => {
    await setUp("wh-quote");
    const body = '{"token": sk_live_abc}';
    const e = event();
    const r = await deliver("wh-quote", "main", body, await p.sign(secret, body, e, nowS()));
    expect(r.status).toBe(400);
    const text = await r.text();
    expect(text).toMatch(/not valid JSON/);
    expect(text).not.toContain("sk_live");
  });
});

/**
 * Issue 18 (DESIGN §11): a webhook row's content digest leaves out by default
 * what that provider's redeliveries change, with no `volatile` in the stream:
 * a redelivery judged afresh (here through a second endpoint of the stream,
 * as after the idempotency window) is a duplicate, not a conflict.
 */
describe.each(CASES)("$type: a redelivery judged afresh", (p) => {
  const stream = `wh-redeliver-${p.type}`;
  const [A, B] = [p.secret(3), p.secret(4)];
  let ready: Promise<void> | undefined;
  const setUp = () =>
    (ready ??= (async () => {
      await createStream(stream, config); // no "volatile"
      await credential(stream, "main", { type: p.type, secret: A });
      await credential(stream, "mirror", { type: p.type, secret: B });
    })());
  const conflicts = async () =>
    (await (await call("GET", `/v1/streams/${stream}/conflicts`)).text())
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));

  it("with what its redeliveries change changed (Stripe's pending_webhooks, GitHub's and Shopify's unsigned headers, the attempt time) is a duplicate", async () => {
    await setUp();
    const e = event("order.paid");
    const body = p.body(e);
    expect(await (await deliver(stream, "main", body, await p.sign(A, body, e, nowS()))).json()).toMatchObject({ emitted: 1, conflicts: 0 });
    // What the provider's next attempt looks like: the same signed event, with only what the provider changes changed.
    const again = p.type === "stripe" ? body.replace('"pending_webhooks":1', '"pending_webhooks":0') : body;
    expect(again === body).toBe(p.type !== "stripe");
    const next = p.signsId ? e : { ...e, id: `${e.id}-redelivery`, time: e.time + 1000, type: "order.updated" };
    const r = await deliver(stream, "mirror", again, await p.sign(B, again, next, nowS() + 1));
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await r.json()).toMatchObject({ source: "mirror", replayed: false, emitted: 0, duplicates: 1, conflicts: 0 });
    const id = await rowId(p, e, body);
    expect((await output(stream)).filter((row) => row.id === id)).toHaveLength(1);
    expect((await conflicts()).filter((c) => c.row.id === id)).toEqual([]);
  });

  it.runIf(p.signsId)("with its payload changed under the same signed id is still a conflict", async () => {
    await setUp();
    const e = event();
    const body = p.body(e);
    expect((await deliver(stream, "main", body, await p.sign(A, body, e, nowS()))).status).toBe(200);
    const changed = body.replace(p.type === "stripe" ? '"amount":2000' : '"invoice":"in_1"', p.type === "stripe" ? '"amount":2500' : '"invoice":"in_2"');
    expect(changed).not.toBe(body);
    const r = await deliver(stream, "mirror", changed, await p.sign(B, changed, e, nowS()));
    expect(await r.json()).toMatchObject({ emitted: 0, duplicates: 1, conflicts: 1 });
    expect((await conflicts()).filter((c) => c.row.id === e.id)).toEqual([
      expect.objectContaining({
        source: "mirror",
        verdict: "dropped",
        kept: expect.objectContaining({ source: "main" }),
        row: expect.objectContaining({ id: e.id, payload: JSON.parse(changed) }),
      }),
    ]);
  });
});

/**
 * Issue 18: a content-keyed stream takes the provider presets too. A row
 * that came through a provider's webhook is keyed by its content without
 * what that provider's redeliveries change (contentExcludeFor), so a
 * redelivery judged afresh keys as the same event; the state reader keys a
 * row the same way when told its provider.
 */
describe.each(CASES)("$type: a content-keyed stream", (p) => {
  const stream = `wh-content-${p.type}`;
  const [A, B] = [p.secret(5), p.secret(6)];
  let ready: Promise<void> | undefined;
  const setUp = () =>
    (ready ??= (async () => {
      await createStream(stream, { key: { content: { exclude: [] } }, eventTime: "time", watermarkDelay: "1 hour", partitions: 2 });
      await credential(stream, "main", { type: p.type, secret: A });
      await credential(stream, "mirror", { type: p.type, secret: B });
    })());

  it("keys a redelivery as the same event, and the state reader finds it by row and provider", async () => {
    await setUp();
    const e = event("order.paid");
    const body = p.body(e);
    expect(await (await deliver(stream, "main", body, await p.sign(A, body, e, nowS()))).json()).toMatchObject({ emitted: 1 });
    const again = p.type === "stripe" ? body.replace('"pending_webhooks":1', '"pending_webhooks":0') : body;
    const next = p.signsId ? e : { ...e, id: `${e.id}-redelivery`, time: e.time + 1000, type: "order.updated" };
    const r = await deliver(stream, "mirror", again, await p.sign(B, again, next, nowS() + 2));
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await r.json()).toMatchObject({ source: "mirror", replayed: false, emitted: 0, duplicates: 1, conflicts: 0 });
    const id = await rowId(p, e, body);
    const kept = (await output(stream)).filter((row) => row.id === id);
    expect(kept).toHaveLength(1);
    // Asked by the row as it was written: keyed as its provider's rows are, it is remembered; keyed as a plain row, it is another key.
    const ask = async (provider?: string) =>
      (
        await json<{ keys: unknown[] }>(
          call("GET", `/v1/streams/${stream}/state?row=${encodeURIComponent(JSON.stringify(kept[0]))}${provider ? `&provider=${provider}` : ""}`),
        )
      ).keys;
    expect(await ask(p.type)).toHaveLength(1);
    expect(await ask()).toEqual([]);
    // A provider it doesn't know, or one without a row, is a 400.
    expect((await call("GET", `/v1/streams/${stream}/state?row=${encodeURIComponent(JSON.stringify(kept[0]))}&provider=paypal`)).status).toBe(400);
    expect((await call("GET", `/v1/streams/${stream}/state?partition=0&provider=${p.type}`)).status).toBe(400);
  });
});

import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { hashToken } from "../../../src/credentials/credential";
import { signBody } from "../../../src/api/signature";
import { signStripe } from "../../../src/webhooks";
import { at, call, createStream, json } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 };

function ingestAs(stream: string, body: string, headers: Record<string, string>) {
  return exports.default.fetch(`http://edge-dedup.test/v1/streams/${stream}/events`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}
async function credential(stream: string, source: string, body: Record<string, unknown>) {
  const r = await call("POST", `/v1/streams/${stream}/sources/${source}/credentials`, body);
  expect(r.status).toBe(201);
  return r.json<any>();
}
const row = (id: string) => JSON.stringify({ id, ts: at(10, 0) });

describe("source tokens", () => {
  it("open ingest for their own source and stream only, and nothing else", async () => {
    await createStream("sec1", base);
    await createStream("sec2", base);
    const tok = await credential("sec1", "stripe", { type: "token", label: "prod" });
    expect(tok).toMatchObject({ type: "token", source: "stripe", label: "prod", secret: expect.stringMatching(/^edt_/) });
    const bearer = { authorization: `Bearer ${tok.secret}` };

    const ok = await ingestAs("sec1", row("A"), bearer);
    expect(ok.status).toBe(200);
    expect((await ok.json<any>()).source).toBe("stripe"); // X-Source defaults to the credential's source
    expect((await ingestAs("sec1", row("B"), { ...bearer, "x-source": "stripe" })).status).toBe(200);
    const other = await ingestAs("sec1", row("C"), { ...bearer, "x-source": "shopify" });
    expect(other.status).toBe(403);
    expect((await other.json<any>()).detail).toMatch(/belongs to source "stripe"/);
    expect((await ingestAs("sec2", row("D"), bearer)).status).toBe(403);
    expect((await ingestAs("nope", row("D"), bearer)).status).toBe(403); // does not learn the stream is missing
    expect((await call("GET", "/v1/streams/sec1", undefined, bearer)).status).toBe(403);
    expect((await call("GET", "/v1/streams/sec1/output", undefined, bearer)).status).toBe(403);
  });

  it("are stored hashed, listed without secrets, and rotate without downtime", async () => {
    await createStream("sec3", base);
    const old = await credential("sec3", "shop", { type: "token" });
    const next = await credential("sec3", "shop", { type: "token", secret: "a-user-chosen-token-of-enough-length" });
    const listed = await json(call("GET", "/v1/streams/sec3/sources/shop/credentials"));
    expect(listed.credentials.map((c: any) => c.id)).toEqual([old.id, next.id]);
    for (const c of listed.credentials) expect(Object.keys(c).sort()).toEqual(["createdAt", "id", "label", "source", "type"]);
    const stored = await runInDurableObject(env.COORDINATOR.getByName("sec3"), (_o, state) =>
      state.storage.sql
        .exec<{ material: string }>("SELECT material FROM credentials ORDER BY created_at, id")
        .toArray()
        .map((r) => r.material),
    );
    expect(stored).toEqual([await hashToken(old.secret), await hashToken(next.secret)]);

    // Both work while producers move over; then the old one is revoked at once.
    expect((await ingestAs("sec3", row("A"), { authorization: `Bearer ${old.secret}` })).status).toBe(200);
    expect((await ingestAs("sec3", row("B"), { authorization: `Bearer ${next.secret}` })).status).toBe(200);
    expect((await call("DELETE", `/v1/streams/sec3/sources/shop/credentials/${old.id}`)).status).toBe(204);
    expect((await ingestAs("sec3", row("C"), { authorization: `Bearer ${old.secret}` })).status).toBe(403);
    expect((await ingestAs("sec3", row("D"), { authorization: `Bearer ${next.secret}` })).status).toBe(200);
    expect((await call("DELETE", `/v1/streams/sec3/sources/shop/credentials/${old.id}`)).status).toBe(404);
  });
});

describe("HMAC signatures", () => {
  it("accept a body signed with a source's secret within the replay window, refuse anything else", async () => {
    await createStream("sig", base);
    const secret = "whsec_test_secret_of_enough_length";
    const cred = await credential("sig", "hooks", { type: "hmac", secret });
    expect(cred.secret).toBe(secret);
    const stored = await runInDurableObject(
      env.COORDINATOR.getByName("sig"),
      (_o, state) => state.storage.sql.exec<{ material: string }>("SELECT material FROM credentials").one().material,
    );
    expect(stored).not.toContain(secret);
    expect(atob(stored)).not.toContain(secret);

    const now = Math.floor(Date.now() / 1000);
    const body = row("A");
    const signed = { "x-source": "hooks", "x-signature": await signBody(secret, body, now) };
    const ok = await ingestAs("sig", body, signed);
    expect(ok.status).toBe(200);
    expect(await ok.json<any>()).toMatchObject({ source: "hooks", emitted: 1 });

    const tampered = await ingestAs("sig", row("B"), signed);
    expect(tampered.status).toBe(401);
    expect((await tampered.json<any>()).detail).toMatch(/does not match/);
    const stale = await ingestAs("sig", body, { "x-source": "hooks", "x-signature": await signBody(secret, body, now - 600) });
    expect(stale.status).toBe(401);
    expect((await stale.json<any>()).detail).toMatch(/timestamp/);
    const wrongKey = await ingestAs("sig", body, { "x-source": "hooks", "x-signature": await signBody("another-secret-of-enough-len", body, now) });
    expect(wrongKey.status).toBe(401);
    expect((await ingestAs("sig", body, { "x-source": "other", "x-signature": signed["x-signature"] })).status).toBe(401);
    expect((await ingestAs("sig", body, { "x-source": "hooks", "x-signature": "garbage" })).status).toBe(401);
    // Revoked: refused even though the signature is right; the same 401 as a wrong secret (issue 14: it was a
    // 403 "the token is not valid" while this isolate's admission cache still held the credential).
    await call("DELETE", `/v1/streams/sig/sources/hooks/credentials/${cred.id}`);
    const revoked = await ingestAs("sig", row("C"), { "x-source": "hooks", "x-signature": await signBody(secret, row("C"), now) });
    expect(revoked.status).toBe(401);
    expect((await revoked.json<any>()).detail).toBe((await wrongKey.json<any>()).detail);
  });
});

describe("hardening", () => {
  it("a disabled source is refused, whatever the credential", async () => {
    await createStream("dis", { ...base, sources: { bad: { disabled: true }, good: {} } });
    const r = await ingestAs("dis", row("A"), { authorization: "Bearer test-admin-token", "x-source": "bad" });
    expect(r.status).toBe(403);
    expect((await r.json<any>()).detail).toMatch(/disabled/);
    expect((await ingestAs("dis", row("A"), { authorization: "Bearer test-admin-token", "x-source": "good" })).status).toBe(200);
  });

  it("requests naming a stream that does not exist leave no storage behind", async () => {
    expect((await ingestAs("ghost", row("A"), { authorization: "Bearer made-up" })).status).toBe(403);
    const now = Math.floor(Date.now() / 1000);
    expect((await ingestAs("ghost", row("A"), { "x-signature": await signBody("whatever-secret-of-length", row("A"), now) })).status).toBe(401);
    const tables = await runInDurableObject(
      env.COORDINATOR.getByName("ghost"),
      (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").one().n,
    );
    expect(tables).toBe(0);
  });

  it("no CORS unless configured", async () => {
    const r = await exports.default.fetch("http://edge-dedup.test/v1/streams/x", {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "GET" },
    });
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
  });

  // Issue 14: one limit, 64, for every JSON the service parses (it was 32 for HTTP bodies only).
  it("deep nesting is refused before parsing", async () => {
    await createStream("deep", base);
    const deep = `[{"id":"A","ts":1,"x":${"[".repeat(63)}${"]".repeat(63)}}]`;
    const r = await call("POST", "/v1/streams/deep/events", deep);
    expect(r.status).toBe(400);
    expect((await r.json<any>()).detail).toMatch(/nests arrays and objects more than 64 levels deep/);
    const limit = `[{"id":"A","ts":${at(10, 0)},"x":${"[".repeat(62)}${"]".repeat(62)}}]`;
    expect((await call("POST", "/v1/streams/deep/events", limit)).status).toBe(200);
    const ndjson = `{"id":"B","ts":${at(10, 0)}}\n{"id":"C","x":${"[".repeat(20_000)}${"]".repeat(20_000)}}`;
    const line = await call("POST", "/v1/streams/deep/events", ndjson, { "content-type": "application/x-ndjson" });
    expect(line.status).toBe(400);
    expect((await line.json<any>()).detail).toMatch(/^NDJSON line 2 nests arrays and objects more than 64 levels deep/);
    // Brackets inside strings do not count.
    const r2 = await call("POST", "/v1/streams/deep/events", JSON.stringify({ id: "[[[[".repeat(20), ts: at(10, 0) }));
    expect(r2.status).toBe(200);
  });

  it("credential bodies are validated", async () => {
    await createStream("credv", base);
    expect((await call("POST", "/v1/streams/credv/sources/s/credentials", { type: "password" })).status).toBe(400);
    expect((await call("POST", "/v1/streams/credv/sources/s/credentials", { type: "token", secret: "short" })).status).toBe(400);
    expect((await call("POST", "/v1/streams/credv/sources/bad%20name/credentials", { type: "token" })).status).toBe(400);
    expect((await call("POST", "/v1/streams/missing/sources/s/credentials", { type: "token" })).status).toBe(404);
  });
});

/** Issue 14: "only signed bytes are identity", and the rest of its findings, through the real Worker. */
describe("issue 14", () => {
  it("an X-Signature to a disabled source is the same 401 as a wrong one, checked before anything reveals the source", async () => {
    await createStream("dis-sig", { ...base, sources: { off: { disabled: true } } });
    const secret = "whsec_disabled_secret_of_length";
    await credential("dis-sig", "off", { type: "hmac", secret });
    const now = Math.floor(Date.now() / 1000);
    const signed = await ingestAs("dis-sig", row("A"), { "x-source": "off", "x-signature": await signBody(secret, row("A"), now) });
    const wrong = await ingestAs("dis-sig", row("A"), { "x-source": "off", "x-signature": await signBody("another-secret-of-length", row("A"), now) });
    const unknown = await ingestAs("dis-sig", row("A"), { "x-source": "ghost", "x-signature": await signBody(secret, row("A"), now) });
    const noStream = await ingestAs("no-such-stream", row("A"), { "x-source": "off", "x-signature": await signBody(secret, row("A"), now) });
    for (const r of [signed, wrong, unknown, noStream]) expect(r.status).toBe(401);
    const [s, w, u, n] = await Promise.all([signed, wrong, unknown, noStream].map((r) => r.json<any>()));
    expect(s).toEqual(w);
    expect(s.detail).toBe(n.detail);
    expect(u.detail).toBe(s.detail.replace('"off"', '"ghost"'));
    expect(s.detail).not.toMatch(/disabled"|is disabled/);
  });

  it("an Idempotency-Key in another ingress's namespace is a 400, so it cannot pre-empt a provider, file or queue batch", async () => {
    await createStream("ns", { ...base, eventTime: "time" }); // a webhook stream: envelope rows are timed by "time"
    const row = (id: string) => JSON.stringify({ id, time: Date.now() - 60_000 });
    for (const key of ["stripe:evt_1", "github:abc", "shopify:abc", "standard-webhooks:msg_1", "r2:in/a.json@e1", "r2h:00", "q:abc", "qid:order-7"]) {
      const r = await ingestAs("ns", row("A"), { authorization: "Bearer test-admin-token", "x-source": "main", "idempotency-key": key });
      expect(r.status, key).toBe(400);
      expect((await r.json<any>()).detail).toMatch(/^Idempotency-Key: batch ids starting with .* are reserved/);
    }
    for (const key of ["evt_1", "stripe-evt_1", "order:7", "Q:abc"]) {
      const r = await ingestAs("ns", row(`http ${key}`), { authorization: "Bearer test-admin-token", "x-source": "main", "idempotency-key": key });
      expect(r.status, key).toBe(200);
    }
    // The Stripe delivery whose batch id a producer tried to take is still a first delivery.
    await credential("ns", "main", { type: "stripe", secret: "whsec_ns" });
    const event = JSON.stringify({ id: "evt_1", object: "event", created: Math.floor(Date.now() / 1000) - 60, type: "x", data: {} });
    const r = await exports.default.fetch("http://edge-dedup.test/v1/streams/ns/sources/main/webhook", {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": await signStripe("whsec_ns", event, Math.floor(Date.now() / 1000)) },
      body: event,
    });
    expect(await r.json()).toMatchObject({ batchId: "stripe:evt_1", replayed: false, emitted: 1 });
  });

  it("error texts say where and what kind, never the row bytes", async () => {
    await createStream("quote", base);
    const secret = "sk_live_abc";
    const cases: [string, string | undefined][] = [
      [`{"id":"A","token":${secret}}`, undefined],
      [`[{"id":"A","token":"x"}, ${secret}]`, undefined],
      [`{"id":"A","token":"${secret}`, undefined],
      [`{"id":"A","ts":${at(10, 0)}}\n{"token":${secret}}`, "application/x-ndjson"],
      [`{"id":"A","ts":${at(10, 0)}}\n{"token":"${secret}"} trailing`, "application/x-ndjson"],
    ];
    for (const [body, type] of cases) {
      const r = await call("POST", "/v1/streams/quote/events", body, type ? { "content-type": type } : {});
      expect(r.status, body).toBe(400);
      const text = await r.text();
      expect(text, body).toMatch(
        /not valid JSON \((an unexpected character|a syntax error at|an unterminated string at|more text after the value at|the text ends)/,
      );
      expect(text, body).not.toContain("sk_live");
    }
    const line = await call("POST", "/v1/streams/quote/events", `{"id":"A"}\n{"id":"B", }`, { "content-type": "application/x-ndjson" });
    expect(await line.json()).toMatchObject({ detail: "NDJSON line 2 is not valid JSON (a syntax error at column 12); nothing was applied" });
  });

  it("durations are at most 365 days: a 400 problem naming the field", async () => {
    const put = (body: Record<string, unknown>) => call("PUT", "/v1/streams/durations", { ...base, ...body });
    for (const [body, path] of [
      [{ watermarkDelay: "99999999999999 days" }, "watermarkDelay"],
      [{ watermarkDelay: 365 * 86_400_000 + 1 }, "watermarkDelay"],
      [{ maxEventTimeSkew: "366 days" }, "maxEventTimeSkew"],
      [{ idleTimeout: "53 weeks" }, "idleTimeout"],
      [{ sources: { s: { watermarkDelay: "1000 days" } } }, "sources.s.watermarkDelay"],
    ] as const) {
      const r = await put(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((await r.json<any>()).errors).toEqual([{ path, message: expect.stringMatching(/365 days/) }]);
    }
    expect((await put({ watermarkDelay: "365 days" })).status).toBe(201);
  });
});

describe("issue 14: admin bodies", () => {
  it("a body nested 20,000 deep is a 400 problem on every route that reads JSON, never a 500", async () => {
    await createStream("deep-admin", base);
    const deep = `{"key":["id"],"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}`;
    for (const [method, path] of [
      ["PUT", "/v1/streams/deep-admin"],
      ["POST", "/v1/streams/deep-admin/sources/s/credentials"],
      ["POST", "/v1/streams/deep-admin/runs"],
    ]) {
      const r = await call(method, path, deep, { "content-type": "application/json" });
      expect(r.status, `${method} ${path}: ${await r.clone().text()}`).toBe(400);
    }
  });
});

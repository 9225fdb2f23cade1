import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { hashToken, signBody } from "../../src/api/credentials";
import { at, call, createStream, json } from "./helpers";

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
      state.storage.sql.exec<{ material: string }>("SELECT material FROM credentials ORDER BY created_at, id").toArray().map((r) => r.material),
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
    const stored = await runInDurableObject(env.COORDINATOR.getByName("sig"), (_o, state) =>
      state.storage.sql.exec<{ material: string }>("SELECT material FROM credentials").one().material,
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
    // Revoked: refused even though the signature is right.
    await call("DELETE", `/v1/streams/sig/sources/hooks/credentials/${cred.id}`);
    expect((await ingestAs("sig", row("C"), { "x-source": "hooks", "x-signature": await signBody(secret, row("C"), now) })).status).toBe(403);
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
    const tables = await runInDurableObject(env.COORDINATOR.getByName("ghost"), (_o, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").one().n,
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

  it("deep nesting is refused before parsing", async () => {
    await createStream("deep", base);
    const deep = `[{"id":"A","ts":1,"x":${"[".repeat(40)}${"]".repeat(40)}}]`;
    const r = await call("POST", "/v1/streams/deep/events", deep);
    expect(r.status).toBe(400);
    expect((await r.json<any>()).detail).toMatch(/nests 42 levels/);
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

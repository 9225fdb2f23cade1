/**
 * Hardening (issue 6): what a caller without a valid credential can make the
 * service do, what a signature covers, bounded records, names from
 * Object.prototype, credential keys, and what sources can do to each other.
 */
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../src/api/app";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { signBody } from "../../../src/api/signature";
import { signRequest } from "../../../src/api/signature";
import { at, call, committedRecords, countingBody, createStream, json, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 };
const row = (id: string, ts = at(10, 0)) => JSON.stringify({ id, ts });
const url = (stream: string) => `http://edge-dedup.test/v1/streams/${stream}/events`;
const nowS = () => Math.floor(Date.now() / 1000);

function direct(stream: string, init: RequestInit, overrides: Record<string, string> = {}) {
  const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  return app.fetch(new Request(url(stream), { method: "POST", ...init }), { ...env, ...overrides }, ctx);
}

function ingestAs(stream: string, body: string, headers: Record<string, string>) {
  return exports.default.fetch(url(stream), { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
}

async function credential(stream: string, source: string, body: Record<string, unknown>) {
  const r = await call("POST", `/v1/streams/${stream}/sources/${source}/credentials`, body);
  expect(r.status, await r.clone().text()).toBe(201);
  return r.json<any>();
}

describe("nothing of the body is read for a caller who is not allowed in", () => {
  it("a bogus token with a broken body is a 403, and the body is never pulled", async () => {
    await createStream("h-auth", base);
    const r = await ingestAs("h-auth", "{not json", { authorization: "Bearer bogus" });
    expect(r.status).toBe(403);
    const { body, seen } = countingBody("x".repeat(64 * 1024), 512); // 32 MiB if read
    const r2 = await direct("h-auth", { body, headers: { authorization: "Bearer bogus" }, duplex: "half" } as RequestInit);
    expect(r2.status).toBe(403);
    expect(seen.pulled).toBeLessThanOrEqual(64 * 1024); // at most what a stream buffers ahead on its own
  });

  it("a Content-Length over the stream's limit is a 413 before reading; a body without one is cut at the limit", async () => {
    await createStream("h-len", { ...base, limits: { maxBodyBytes: 4096 } });
    const declared = countingBody("x".repeat(1024), 64);
    const r = await direct("h-len", {
      body: declared.body,
      headers: { authorization: "Bearer test-admin-token", "content-length": String(64 * 1024) },
      duplex: "half",
    } as RequestInit);
    expect(r.status).toBe(413);
    expect(declared.seen.pulled).toBeLessThanOrEqual(1024);
    const streamed = countingBody("x".repeat(1024), 64);
    const r2 = await direct("h-len", { body: streamed.body, headers: { authorization: "Bearer test-admin-token" }, duplex: "half" } as RequestInit);
    expect(r2.status).toBe(413);
    expect((await r2.json<any>()).detail).toMatch(/at most 4096/);
    expect(streamed.seen.pulled).toBeLessThanOrEqual(4096 + 2 * 1024);
  });

  it("NDJSON parsing stops at maxRows", async () => {
    await createStream("h-rows", { ...base, limits: { maxRows: 2 } });
    const lines = [row("A"), row("B"), row("C"), "{broken"].join("\n");
    const r = await call("POST", "/v1/streams/h-rows/events", lines, { "content-type": "application/x-ndjson" });
    // Stopped at the third row: the broken fourth line is never parsed.
    expect(r.status).toBe(413);
    expect((await r.json<any>()).detail).toMatch(/more than 2 rows/);
  });

  it("existence and authorization come before body checks", async () => {
    const r = await call("POST", "/v1/streams/h-nowhere/events", "");
    expect(r.status).toBe(404);
    const r2 = await call("POST", "/v1/streams/h-nowhere/events", "[]");
    expect(r2.status).toBe(404);
  });
});

describe("a v2 signature is bound to what the request does", () => {
  const secret = "h-shared-signing-secret-0123456789";
  async function setup(stream: string, source = "hooks") {
    await createStream(stream, base);
    await credential(stream, source, { type: "hmac", secret });
  }
  const sign = (stream: string, body: string, batchId: string, contentType = "application/json", source = "hooks", t = nowS()) =>
    signRequest(secret, body, t, { stream, source, batchId, contentType });

  it("a captured request can't be re-sent to another stream, source, batch id or content type", async () => {
    await setup("h-v2a");
    await setup("h-v2b");
    await setup("h-v2a-other", "other");
    const body = `[${row("A")}]`;
    const signed = { "x-source": "hooks", "idempotency-key": "k1", "x-signature": await sign("h-v2a", body, "k1") };
    const ok = await ingestAs("h-v2a", body, signed);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("deprecation")).toBeNull();
    expect((await ingestAs("h-v2a", body, signed)).status).toBe(200); // the producer's own retry replays
    expect((await ingestAs("h-v2a", body, { ...signed, "content-type": "application/x-ndjson" })).status).toBe(401);
    expect((await ingestAs("h-v2a", body, { ...signed, "idempotency-key": "k2" })).status).toBe(401);
    expect((await ingestAs("h-v2b", body, signed)).status).toBe(401);
    const { "x-source": _s, ...noSource } = signed;
    expect((await ingestAs("h-v2a", body, { ...noSource, "x-source": "other" })).status).toBe(401);
    expect(await json(call("GET", "/v1/streams/h-v2a"))).toMatchObject({ batches: { committed: 1 } });
    expect(await json(call("GET", "/v1/streams/h-v2b"))).toMatchObject({ batches: { committed: 0 } });
  });

  it("needs an Idempotency-Key, which it covers", async () => {
    await setup("h-v2key");
    const body = row("A");
    const r = await ingestAs("h-v2key", body, { "x-source": "hooks", "x-signature": await sign("h-v2key", body, "") });
    expect(r.status).toBe(400);
    expect((await r.json<any>()).detail).toMatch(/Idempotency-Key/);
  });

  it("the timestamp window holds on both sides of both edges", async () => {
    await setup("h-window");
    const body = row("A");
    for (const [offset, status] of [
      [-305, 401],
      [-295, 200],
      [295, 200],
      [305, 401],
    ] as const) {
      const t = nowS() + offset;
      const id = `w${offset}`;
      const r = await ingestAs("h-window", body, {
        "x-source": "hooks",
        "idempotency-key": id,
        "x-signature": await sign("h-window", body, id, "application/json", "hooks", t),
      });
      expect(r.status, `offset ${offset}`).toBe(status);
    }
  });

  it("v1 is still verified but deprecated, and can be refused", async () => {
    await setup("h-v1");
    const body = row("A");
    const v1 = { "x-source": "hooks", "content-type": "application/json", "x-signature": await signBody(secret, body, nowS()) };
    const r = await ingestAs("h-v1", body, v1);
    expect(r.status).toBe(200);
    expect(r.headers.get("deprecation")).toBe("true");
    const refused = await direct("h-v1", { body, headers: { ...v1, "idempotency-key": "v1-off" } }, { ACCEPT_SIGNATURE_V1: "false" });
    expect(refused.status).toBe(401);
    expect((await refused.json<any>()).detail).toMatch(/v1/);
  });

  it("the parse mode is part of a batch's identity", async () => {
    await setup("h-mode");
    const body = `[${row("A")},${row("B")}]`; // one line: as NDJSON it is one row that is not an object
    const asNdjson = await call("POST", "/v1/streams/h-mode/events", body, { "content-type": "application/x-ndjson", "idempotency-key": "p1" });
    expect(await asNdjson.json()).toMatchObject({ input: 1, emitted: 0, rejected: [{ index: 0 }] });
    // The same bytes as JSON under that key are another batch: a 422, not a replay of the rejected one.
    const asJson = await call("POST", "/v1/streams/h-mode/events", body, { "idempotency-key": "p1" });
    expect(asJson.status).toBe(422);
  });
});

describe("stored records stay bounded", () => {
  it("the response and the record list at most 100 rejected rows, with the full count", async () => {
    await createStream("h-rej", { ...base, limits: { maxRows: 20_000 } });
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ id: `k${i}` })); // no ts: every row rejected
    const r = await post("h-rej", rows);
    expect(r.rejected).toHaveLength(100);
    expect(r.rejected[99]).toEqual({ index: 99, error: "ts: missing event time" });
    expect(r.rejectedCount).toBe(20_000);
    expect(r.emitted + r.duplicates + r.late + r.rejectedCount).toBe(r.input);
    const size = await runInDurableObject(env.COORDINATOR.getByName("h-rej"), (_o, state) =>
      // in its commit record, or kept apart in `batches` when large (src/coordinator/ledger.ts)
      Math.max(
        ...committedRecords(state.storage.sql).map((r) => r.report?.length ?? 0),
        state.storage.sql.exec<{ n: number }>("SELECT max(length(report)) AS n FROM batches").one().n,
      ),
    );
    expect(size).toBeLessThan(16_000);
    expect((await json(call("GET", "/v1/streams/h-rej/progress"))).progress[0].rejected).toBe(20_000);
    const lane = await (await call("GET", "/v1/streams/h-rej/rejected")).text();
    expect(lane.trim().split("\n")).toHaveLength(20_000);
  });

  it("a commit that fails half way changes nothing", async () => {
    await createStream("h-tx", base);
    const stub = env.COORDINATOR.getByName("h-tx");
    const req: IngestRequest = { sourceHeader: "s", batchId: "b1", auth: { kind: "admin" }, rows: [{ id: "A", ts: at(12, 0) }], identity: "h", bytes: 1 };
    await runInDurableObject(stub, async (c) => {
      // The commit's transaction fails after the batch's records are written in it (the ledger's part done, the state record not).
      const ledger = (c as unknown as { stores: { ledger: { commit: (...a: unknown[]) => unknown } } }).stores.ledger;
      const commit = ledger.commit;
      ledger.commit = function (this: unknown, ...a: unknown[]) {
        commit.apply(this, a);
        throw new Error("the commit failed half way");
      };
      try {
        await expect(c.ingest(req)).rejects.toThrow(/failed half way/);
      } finally {
        ledger.commit = commit;
      }
    });
    const d = await json(call("GET", "/v1/streams/h-tx"));
    expect(d.watermark).toBe(0);
    expect(d.sources).toEqual({});
    expect(d.batches.committed).toBe(0);
    expect(await runInDurableObject(stub, (_c, state) => committedRecords(state.storage.sql).length)).toBe(0);
    // Its retry commits it as a first commit would: counted once, as if the failed one had never been.
    expect(await stub.ingest(req)).toMatchObject({ kind: "done", outcome: { replayed: false, emitted: 1, watermarkAfter: at(11, 55) } });
    expect((await json(call("GET", "/v1/streams/h-tx"))).batches.committed).toBe(1);
    expect(await stub.metrics()).toMatchObject({ batches: 1, rows: [{ source: "s", outcome: "emitted", n: 1 }] });
  });
});

describe("names from Object.prototype are ordinary names", () => {
  it("sources called constructor and valueOf", async () => {
    await createStream("h-proto", { ...base, sources: { constructor: {}, toString: { watermarkDelay: "1 minute" } } });
    for (const source of ["constructor", "valueOf", "toString"]) {
      const r = await post("h-proto", { id: source, ts: at(10, 0) }, { "x-source": source });
      expect(r).toMatchObject({ source, emitted: 1 });
    }
    const d = await json(call("GET", "/v1/streams/h-proto"));
    expect(d.watermark).toBe(at(9, 55));
    expect(d.sources.toString.watermark).toBe(at(9, 59));
    expect(d.sources.valueOf.declared).toBe(false);
  });

  it("a key column called toString must be in the row; non-finite numbers are no key", async () => {
    await createStream("h-tostr", { ...base, key: ["toString"] });
    const r = await post("h-tostr", [{ ts: at(10, 0) }, { toString: "x", ts: at(10, 0) }]);
    expect(r).toMatchObject({ emitted: 1, rejected: [{ index: 0, error: "toString: missing key column" }] });
    await createStream("h-inf", base);
    const r2 = await call("POST", "/v1/streams/h-inf/events", `[{"id":1e999,"ts":${at(10, 0)}},{"id":-1e999,"ts":${at(10, 0)}},{"id":1,"ts":${at(10, 0)}}]`);
    expect(await r2.json()).toMatchObject({ emitted: 1, rejected: [{ index: 0, error: expect.stringMatching(/finite/) }, { index: 1 }] });
  });

  it("a column named __proto__ is refused at config time", async () => {
    const r = await call("PUT", "/v1/streams/h-dunder", JSON.parse(`{"key":["id"],"mode":"global","schema":{"__proto__":"int"}}`));
    expect(r.status).toBe(400);
  });
});

describe("credentials", () => {
  it("a token is unique within a stream", async () => {
    await createStream("h-uniq", base);
    const secret = "one-token-for-two-sources-0123456789";
    await credential("h-uniq", "a", { type: "token", secret });
    const r = await call("POST", "/v1/streams/h-uniq/sources/b/credentials", { type: "token", secret });
    expect(r.status).toBe(409);
    expect((await ingestAs("h-uniq", row("A"), { authorization: `Bearer ${secret}` })).status).toBe(200);
  });

  it("CREDENTIALS_KEY rotates: the previous key still opens, secrets are re-sealed, an unknown key is a 503", async () => {
    await createStream("h-rot", base);
    const secret = "rotating-signing-secret-0123456789";
    await credential("h-rot", "hooks", { type: "hmac", secret });
    const material = () =>
      runInDurableObject(
        env.COORDINATOR.getByName("h-rot"),
        (_o, s) => s.storage.sql.exec<{ material: string }>("SELECT material FROM credentials").one().material,
      );
    const before = await material();
    const next = "the-next-credentials-key-0123456789abcdef";
    const send = async (id: string, keys: Record<string, string>) => {
      const body = row(id);
      const sig = await signRequest(secret, body, nowS(), { stream: "h-rot", source: "hooks", batchId: id, contentType: "application/json" });
      return direct("h-rot", { body, headers: { "content-type": "application/json", "x-source": "hooks", "idempotency-key": id, "x-signature": sig } }, keys);
    };
    // Another key alone: every signed request, a junk one too, is a 503 problem, not a 500.
    const unknown = await send("A", { CREDENTIALS_KEY: "an-unrelated-credentials-key-0123456789" });
    expect(unknown.status).toBe(503);
    expect(unknown.headers.get("content-type")).toMatch(/problem\+json/);
    expect((await unknown.json<any>()).detail).toMatch(/CREDENTIALS_KEY_PREVIOUS/);

    expect((await send("B", { CREDENTIALS_KEY: next, CREDENTIALS_KEY_PREVIOUS: env.CREDENTIALS_KEY! })).status).toBe(200);
    expect(await material()).not.toBe(before); // re-sealed under the new key
    expect((await send("C", { CREDENTIALS_KEY: next, CREDENTIALS_KEY_PREVIOUS: "" })).status).toBe(200);
  });

  it("a sealed secret is bound to its credential, and short keys are refused", async () => {
    await createStream("h-ad", base);
    const a = await credential("h-ad", "a", { type: "hmac", secret: "secret-of-source-a-0123456789abcd" });
    await credential("h-ad", "b", { type: "hmac", secret: "secret-of-source-b-0123456789abcd" });
    await runInDurableObject(env.COORDINATOR.getByName("h-ad"), (_o, s) => {
      s.storage.sql.exec("UPDATE credentials SET material = (SELECT material FROM credentials WHERE id = ?) WHERE source = 'b'", a.id);
    });
    const body = row("A");
    const sig = await signRequest(a.secret, body, nowS(), { stream: "h-ad", source: "b", batchId: "x", contentType: "application/json" });
    const r = await ingestAs("h-ad", body, { "x-source": "b", "idempotency-key": "x", "x-signature": sig });
    expect(r.status).toBe(503);
    expect((await r.json<any>()).detail).toMatch(/another credential/);

    const short = await app.fetch(
      new Request("http://edge-dedup.test/v1/streams/h-ad/sources/c/credentials", {
        method: "POST",
        headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
        body: JSON.stringify({ type: "hmac" }),
      }),
      { ...env, CREDENTIALS_KEY: "too-short" },
    );
    expect(short.status).toBe(503);
    expect((await short.json<any>()).detail).toMatch(/at least 32/);
  });
});

describe("what sources of one stream can do to each other", () => {
  it("a source's event times are capped ahead of the clock and of the watermark", async () => {
    const config = {
      ...base,
      watermarkPolicy: "max",
      watermarkDelay: "10 minutes",
      sources: { partner: { maxEventTimeSkew: "5 minutes", maxAheadOfWatermark: "1 hour" }, own: {} },
    };
    // Ahead of the clock: the partner's cap is 5 minutes, the stream's a day.
    await createStream("h-clock", config);
    const soon = Date.now() + 10 * 60_000;
    expect((await post("h-clock", [{ id: "p1", ts: soon }], { "x-source": "partner" })).rejected[0].error).toMatch(/clock skew/);
    expect((await post("h-clock", [{ id: "o1", ts: soon }], { "x-source": "own" })).emitted).toBe(1);

    // Ahead of the watermark: with wm = 09:50 (+ 10 min delay), the partner may reach 11:00, not beyond.
    await createStream("h-caps", config);
    await post("h-caps", [{ id: "o2", ts: at(10, 0) }], { "x-source": "own" });
    expect((await json(call("GET", "/v1/streams/h-caps"))).watermark).toBe(at(9, 50));
    const pushed = await post(
      "h-caps",
      [
        { id: "p2", ts: at(11, 1) },
        { id: "p3", ts: at(10, 59) },
      ],
      { "x-source": "partner" },
    );
    expect(pushed).toMatchObject({ emitted: 1, rejected: [{ index: 0, error: expect.stringMatching(/ahead of the watermark/) }] });
    expect((await json(call("GET", "/v1/streams/h-caps"))).watermark).toBe(at(10, 49));
  });
});

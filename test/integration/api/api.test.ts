import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { batchFaultKey, holdRun } from "../../../src/instrument/faults";
import { at, call, createStream, json, output, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 };

async function expectProblem(r: Response, status: number, detail: RegExp) {
  expect(r.status).toBe(status);
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  const p = await r.json<any>();
  expect(p).toMatchObject({ status, type: expect.stringMatching(/^https:\/\//), title: expect.any(String) });
  expect(p.detail).toMatch(detail);
  return p;
}

describe("auth", () => {
  it("nothing is open without a token", async () => {
    const r = await exports.default.fetch("http://x/v1/streams/any", { method: "GET" });
    await expectProblem(r, 401, /Bearer/);
    expect(r.headers.get("www-authenticate")).toContain("Bearer");
    await expectProblem(await call("GET", "/v1/streams/any", undefined, { authorization: "Bearer wrong" }), 403, /not valid/);
    await expectProblem(await call("POST", "/v1/streams/any/events", { id: 1 }, { authorization: "Bearer wrong" }), 403, /not valid/);
  });
});

describe("streams", () => {
  it("create 201, unchanged 200, update 200, bound change 409, GET shows config and defaults", async () => {
    const r = await call("PUT", "/v1/streams/s1", base);
    expect(r.status).toBe(201);
    expect((await r.json<any>()).config).toMatchObject({ mode: "within-watermark", watermarkDelay: 300_000, watermarkPolicy: "min", partitions: 2 });
    expect((await json(call("PUT", "/v1/streams/s1", base))).status).toBe("unchanged");
    const upd = await call("PUT", "/v1/streams/s1", { ...base, watermarkDelay: 600_000, watermarkPolicy: "max" });
    expect(upd.status).toBe(200);
    expect((await upd.json<any>()).status).toBe("updated");
    const p = await expectProblem(await call("PUT", "/v1/streams/s1", { ...base, mode: "global" }), 409, /mode/);
    expect(p.errors).toEqual([{ path: "mode", message: "bound at creation" }]);
    const d = await json(call("GET", "/v1/streams/s1"));
    expect(d).toMatchObject({ stream: "s1", watermark: 0, sources: {}, state: { rows: 0 }, batches: { committed: 0 } });
    expect(d.config.watermarkDelay).toBe(600_000);
  });

  it("invalid configs are 400 with an error per field", async () => {
    const p = await expectProblem(
      await call("PUT", "/v1/streams/s2", { key: ["id"], mode: "sometimes", partitions: 0, watermarkDelay: "soon", extra: 1 }),
      400,
      /invalid/,
    );
    const paths = p.errors.map((e: any) => e.path);
    expect(paths).toEqual(expect.arrayContaining(["mode", "partitions", "watermarkDelay", "(body)"]));
    await expectProblem(await call("PUT", "/v1/streams/s2", { key: ["id"] }), 400, /invalid/);
    await expectProblem(await call("PUT", "/v1/streams/s2", "{nope"), 400, /JSON/);
    await expectProblem(await call("PUT", "/v1/streams/bad%20name", base), 400, /stream name/);
    expect((await call("GET", "/v1/streams/s2")).status).toBe(404);
  });

  it("unknown stream 404, wrong method 405, unknown route 404", async () => {
    await expectProblem(await call("GET", "/v1/streams/nope"), 404, /does not exist/);
    await expectProblem(await call("POST", "/v1/streams/nope/events", { id: 1, ts: 1 }), 404, /does not exist/);
    const r = await call("POST", "/v1/streams/nope");
    await expectProblem(r, 405, /GET, PUT, PATCH, DELETE/);
    expect(r.headers.get("allow")).toBe("GET, PUT, PATCH, DELETE");
    await expectProblem(await call("GET", "/v1/streams/nope/events"), 405, /POST/);
    await expectProblem(await call("GET", "/nowhere"), 404, /no route/);
  });

  it("DELETE drops state, ledger and output; the name can be used afresh", async () => {
    await createStream("gone", base);
    await post("gone", [{ id: "A", ts: at(10, 0) }], { "idempotency-key": "b1" });
    expect((await call("DELETE", "/v1/streams/gone")).status).toBe(204);
    expect((await call("GET", "/v1/streams/gone")).status).toBe(404);
    expect((await call("DELETE", "/v1/streams/gone")).status).toBe(404);
    await createStream("gone", base);
    // Same batch id and body: a new stream runs it anew instead of replaying the old outcome.
    const r = await post("gone", [{ id: "A", ts: at(10, 0) }], { "idempotency-key": "b1" });
    expect(r).toMatchObject({ replayed: false, emitted: 1 });
    expect(await output("gone")).toEqual([{ id: "A", ts: at(10, 0) }]);
  });
});

describe("ingest", () => {
  it("accepts one object, an array, or NDJSON; returns and honours Idempotency-Key", async () => {
    await createStream("in1", base);
    const one = await call("POST", "/v1/streams/in1/events", { id: "A", ts: at(10, 0) });
    expect(one.status).toBe(200);
    const generated = one.headers.get("idempotency-key");
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect((await one.json<any>()).batchId).toBe(generated);
    const nd = `{"id":"B","ts":${at(10, 1)}}\n\n{"id":"A","ts":${at(10, 2)}}\n`;
    const r = await post("in1", nd, { "content-type": "application/x-ndjson", "x-source": "shop" });
    expect(r).toMatchObject({ source: "shop", input: 2, emitted: 1, duplicates: 1 });
  });

  it("rejects bad rows by index, keeps the good ones, and never counts them into the watermark", async () => {
    await createStream("in2", { ...base, schema: { amount: "double", n: "int" } });
    const rows = [
      { id: "A", ts: at(10, 0), amount: "12.5", n: "3" },
      { ts: at(10, 0) },
      { id: "B", ts: "yesterday" },
      { id: "C", ts: Date.now() + 3 * 86_400_000 },
      { id: "D", ts: at(10, 1), n: 1.5 },
      "not an object",
      { id: { nested: 1 }, ts: at(10, 0) },
    ];
    const r = await post("in2", rows);
    expect(r).toMatchObject({ input: 7, emitted: 1, duplicates: 0, late: 0 });
    expect(r.rejected.map((x: any) => x.index)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.rejected[0].error).toMatch(/^id: missing/);
    expect(r.rejected[2].error).toMatch(/clock skew/);
    expect(r.emitted + r.duplicates + r.late + r.rejected.length).toBe(r.input);
    expect(r.watermarkAfter).toBe(at(9, 55)); // the future row did not move it
    expect(await output("in2")).toEqual([{ id: "A", ts: at(10, 0), amount: 12.5, n: 3 }]);
  });

  it("a batch that cannot be parsed is a 400 and changes nothing", async () => {
    await createStream("in3", base);
    await expectProblem(await call("POST", "/v1/streams/in3/events", "{broken"), 400, /not valid JSON/);
    await expectProblem(await call("POST", "/v1/streams/in3/events", "42"), 400, /scalar/);
    await expectProblem(await call("POST", "/v1/streams/in3/events", "[]"), 400, /no rows/);
    const p = await expectProblem(
      await call("POST", "/v1/streams/in3/events", `{"id":"A","ts":1}\n{oops\n`, { "content-type": "application/x-ndjson" }),
      400,
      /line 2/,
    );
    expect(p.errors).toEqual([{ line: 2, error: expect.any(String) }]);
    await expectProblem(await call("POST", "/v1/streams/in3/events", { id: "A", ts: 1 }, { "x-source": "bad source!" }), 400, /X-Source/);
    const d = await json(call("GET", "/v1/streams/in3"));
    expect(d.batches.committed).toBe(0);
    expect(d.sources).toEqual({});
  });

  it("limits: too many rows or bytes is a 413 and nothing is applied", async () => {
    await createStream("in4", { ...base, limits: { maxRows: 3, maxBodyBytes: 2048 } });
    const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `k${i}`, ts: at(10, 0) }));
    await expectProblem(await call("POST", "/v1/streams/in4/events", rows(4)), 413, /at most 3/);
    await expectProblem(await call("POST", "/v1/streams/in4/events", [{ id: "x".repeat(3000), ts: at(10, 0) }]), 413, /at most 2048/);
    expect((await post("in4", rows(3))).emitted).toBe(3);
  });

  it("a retried batch returns the recorded outcome and writes nothing; another body under its id is 422", async () => {
    await createStream("in5", base);
    const rows = [
      { id: "A", ts: at(10, 0) },
      { id: "A", ts: at(10, 0) },
      { id: "B", ts: at(10, 3) },
    ];
    const first = await post("in5", rows, { "idempotency-key": "batch-1" });
    expect(first).toMatchObject({ batchId: "batch-1", source: "default", replayed: false, input: 3, emitted: 2, duplicates: 1 });
    const again = await post("in5", rows, { "idempotency-key": "batch-1" });
    expect(again).toEqual({ ...first, replayed: true });
    await expectProblem(await call("POST", "/v1/streams/in5/events", [{ id: "C", ts: at(10, 0) }], { "idempotency-key": "batch-1" }), 422, /different body/);
    expect(await output("in5")).toEqual([rows[0], rows[2]]);
    expect((await json(call("GET", "/v1/streams/in5/progress"))).progress).toHaveLength(1);
  });

  it("concurrent requests with one batch id: one runs, the others get its outcome; output once", async () => {
    await createStream("in6", { ...base, partitions: 4 });
    const rows = Array.from({ length: 50 }, (_, i) => ({ id: `k${i}`, ts: at(10, 0) }));
    const rs = await Promise.all(Array.from({ length: 6 }, () => call("POST", "/v1/streams/in6/events", rows, { "idempotency-key": "same" })));
    const bodies = await Promise.all(rs.map((r) => r.json<any>()));
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(bodies.filter((b) => !b.replayed)).toHaveLength(1);
    for (const b of bodies) expect(b.emitted).toBe(50);
    expect(await output("in6")).toHaveLength(50);
  });

  it("a request for a batch still in flight waits for it, then gets 409 with Retry-After", async () => {
    await createStream("in9", base);
    const body = JSON.stringify([{ id: "A", ts: at(10, 0) }]);
    const headers = { "idempotency-key": "held", "content-type": "application/json" };
    // Another request holds the batch (begun, not committed, lease live): the test build holds its run after its begin; it then fails.
    const hold = holdRun(batchFaultKey("in9", "held"));
    const holder = call("POST", "/v1/streams/in9/events", body, { ...headers, "x-test-fault": "after-decide" });
    await hold.reached;
    const started = Date.now();
    const r = await call("POST", "/v1/streams/in9/events", body, headers);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_500);
    await expectProblem(r, 409, /being processed/);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Once the holder lets go (here: it failed), the retry runs the batch.
    hold.release();
    expect((await holder).status).toBe(500);
    expect(await post("in9", body, headers)).toMatchObject({ replayed: false, emitted: 1 });
  });

  it("output is in commit order and ?after= skips committed batches", async () => {
    await createStream("in7", base);
    for (let i = 0; i < 5; i++) await post("in7", { id: `k${i}`, ts: at(10, i) });
    expect((await output("in7")).map((r) => r.id)).toEqual(["k0", "k1", "k2", "k3", "k4"]);
    const text = new TextDecoder().decode(await (await call("GET", "/v1/streams/in7/output?after=3")).arrayBuffer());
    expect(
      text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).id),
    ).toEqual(["k3", "k4"]);
  });

  it("progress reports carry Spark's names", async () => {
    await createStream("in8", base);
    await post(
      "in8",
      [
        { id: "A", ts: at(10, 0) },
        { id: "A", ts: at(10, 0) },
      ],
      { "idempotency-key": "p1" },
    );
    const [p] = (await json(call("GET", "/v1/streams/in8/progress"))).progress;
    expect(p).toMatchObject({
      batchId: "p1",
      source: "default",
      input: 2,
      emitted: 1,
      duplicates: 1,
      late: 0,
      rejected: 0,
      watermark: 0,
      watermarkAfter: at(9, 55),
      numRowsTotal: 1,
      numRowsUpdated: 1,
      numRowsRemoved: 0,
    });
    expect(p.stateBytes).toBeGreaterThan(0);
    expect(p.committedAt).toBeGreaterThan(0);
  });
});

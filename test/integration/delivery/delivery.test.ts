import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ageCommits, call, createStream, json, output, post, D, until } from "../helpers";
import { destinationListSchema, destinationPutSchema, destinationSchema, deadLaneSchema } from "../../../src/delivery/schemas";

/**
 * Destinations (DESIGN §10) inside workerd: the routes, a queue destination
 * consumed by a second Worker (test/support/delivery-helper-worker.js), the
 * dead lane and replay of an http destination nobody answers, and Workers
 * RPC from that second Worker over a service binding.
 */
const helper = (env as unknown as { DELIVERY_HELPER: Fetcher }).DELIVERY_HELPER;
const T = Date.UTC(2026, 0, 1);
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 };

interface RpcAnswer {
  ok: boolean;
  value?: any;
  message?: string;
  name?: string;
  status?: number;
  kind?: string;
  detail?: string;
  retryAfterMs?: number;
}

async function rpc(method: string, ...args: unknown[]): Promise<RpcAnswer> {
  return (await helper.fetch("http://helper/rpc", { method: "POST", body: JSON.stringify({ method, args }) })).json();
}

describe("destination routes", () => {
  it("validate, create with a secret shown once, update, list, delete", async () => {
    await createStream("d-routes", base);
    const bad = async (body: unknown, path = D("d-routes", "a")) => {
      const r = await call("PUT", path, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      return r.json<any>();
    };
    expect((await bad({ type: "http", url: "http://hooks.example.com/" })).detail).toMatch(/https/);
    expect((await bad({ type: "http", url: "https://10.0.0.8/" })).detail).toMatch(/public/);
    expect((await bad({ type: "http", url: "https://u:p@hooks.example.com/" })).detail).toMatch(/credentials/);
    expect((await bad({ type: "queue", binding: "EVENTS" })).detail).toMatch(/EVENTS/);
    expect((await bad({ type: "queue", binding: "NOPE" })).detail).toMatch(/NOPE/);
    await bad({ type: "http", url: "https://hooks.example.com/", retryFor: "forever" });
    await bad({ type: "http", url: "https://hooks.example.com/" }, D("d-routes", "-bad"));
    expect((await call("PUT", D("nope", "a"), { type: "http", url: "https://hooks.example.com/" })).status).toBe(404);

    const created = await call("PUT", D("d-routes", "a"), { type: "http", url: "http://127.0.0.1:1/hook", timeout: "2 seconds" });
    expect(created.status).toBe(201);
    const c = destinationPutSchema.parse(await created.json());
    expect(c.secret).toMatch(/^whsec_/);
    expect(c.destination).toMatchObject({ type: "http", url: "http://127.0.0.1:1/hook", timeoutMs: 2000, deliveredSeq: 0, pending: 0, failing: false });
    const again = await call("PUT", D("d-routes", "a"), { type: "http", url: "http://127.0.0.1:2/hook" });
    expect(again.status).toBe(200);
    const u = destinationPutSchema.parse(await again.json());
    expect(u.secret).toBeUndefined();
    expect(u.destination.url).toBe("http://127.0.0.1:2/hook");
    expect(JSON.stringify(await json(call("GET", D("d-routes", "a"))))).not.toContain(c.secret!);

    const rotated = await call("POST", `${D("d-routes", "a")}/rotate-secret`, { overlap: "1 hour" });
    expect(rotated.status).toBe(201);
    expect((await rotated.json<any>()).secret).toMatch(/^whsec_/);
    expect(destinationSchema.parse(await json(call("GET", D("d-routes", "a")))).secrets).toHaveLength(2);

    expect((await call("PUT", D("d-routes", "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
    const list = destinationListSchema.parse(await json(call("GET", "/v1/streams/d-routes/destinations")));
    expect(list.destinations.map((d) => d.name)).toEqual(["a", "q"]);
    expect((await call("DELETE", D("d-routes", "a"))).status).toBe(204);
    expect((await call("GET", D("d-routes", "a"))).status).toBe(404);
    expect((await call("DELETE", D("d-routes", "a"))).status).toBe(404);
    expect((await call("PATCH", D("d-routes", "q"))).status).toBe(405);
    expect((await json(call("GET", "/v1/streams/d-routes/destinations"))).destinations.map((d: any) => d.name)).toEqual(["q"]);
    // Admin only.
    expect((await call("GET", D("d-routes", "q"), undefined, { authorization: "Bearer nope" })).status).toBe(403);
  });
});

describe("a queue destination", () => {
  it("sends every emitted row once per id, in messages a consumer Worker receives, with the output's rows", async () => {
    await createStream("d-queue", base);
    expect((await call("PUT", D("d-queue", "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
    let emitted = 0;
    for (let b = 0; b < 6; b++) {
      // Overlapping ids: each batch repeats two ids of the previous one.
      const rows = Array.from({ length: 8 }, (_, i) => ({ id: b * 6 + i, ts: T + b * 6 + i, b }));
      emitted += (await post("d-queue", rows, { "idempotency-key": `b${b}` })).emitted;
    }
    expect(emitted).toBe(6 * 6 + 2);
    const received = await until("the queue's messages", async () => {
      const got = await (await helper.fetch("http://helper/received?prefix=d-queue.")).json<any[]>();
      return got.length >= emitted ? got : null;
    });
    expect(received).toHaveLength(emitted);
    const out = await output("d-queue");
    expect(received.map((m) => m.body.row).sort((a, b) => a.id - b.id)).toEqual([...out].sort((a, b) => a.id - b.id));
    for (const m of received) expect(m.body.id).toBe(`d-queue.${m.body.seq}.${m.body.index}`);
    const status = await until("deliveredSeq", async () => {
      const s = destinationSchema.parse(await json(call("GET", D("d-queue", "q"))));
      return s.deliveredSeq === 6 && s.pending === 0 ? s : null;
    });
    expect(status).toMatchObject({ delivered: emitted, failing: false, dead: 0, lagMs: 0 });
    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics).toContain(`edge_dedup_deliveries_total{stream="d-queue",destination="q",type="queue",outcome="delivered"} ${emitted}`);
    expect(metrics).toContain('edge_dedup_delivery_delivered_seq{stream="d-queue",destination="q",type="queue"} 6');
    expect(metrics).toContain('edge_dedup_delivery_lag_ms{stream="d-queue",destination="q",type="queue"} 0');
  });
});

describe("a queue destination and a row no queue message can hold", () => {
  it("puts that row in the dead lane at once and sends its neighbours", async () => {
    await createStream("d-big", base);
    expect((await call("PUT", D("d-big", "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
    await post(
      "d-big",
      [
        { id: 1, ts: T },
        { id: 2, ts: T, blob: "x".repeat(130 * 1024) },
        { id: 3, ts: T },
      ],
      { "idempotency-key": "big" },
    );
    const dead = await until("the dead lane", async () => {
      const page = deadLaneSchema.parse(await json(call("GET", `${D("d-big", "q")}/dead`)));
      return page.rows.length === 1 ? page : null;
    });
    expect(dead.rows[0]).toMatchObject({ id: "d-big.1.1", attempts: 1, lastError: expect.stringMatching(/larger than a queue message/) });
    const received = await until("the other two", async () => {
      const got = await (await helper.fetch("http://helper/received?prefix=d-big.")).json<any[]>();
      return got.length >= 2 ? got : null;
    });
    expect(received.map((m) => m.body.id).sort()).toEqual(["d-big.1.0", "d-big.1.2"]);
    // Beyond what any destination sends (512 KB): a stand-in in the dead lane, never attempted.
    await post(
      "d-big",
      [
        { id: 4, ts: T, blob: "y".repeat(600 * 1024) },
        { id: 5, ts: T },
      ],
      { "idempotency-key": "huge" },
    );
    const both = await until("the huge row's stand-in", async () => {
      const page = deadLaneSchema.parse(await json(call("GET", `${D("d-big", "q")}/dead`)));
      return page.rows.length === 2 ? page : null;
    });
    expect(both.rows[1]).toMatchObject({ id: "d-big.2.0", attempts: 0, row: { tooLarge: true }, lastError: expect.stringMatching(/over 524288 bytes/) });
    await until("the row after it", async () => {
      const got = await (await helper.fetch("http://helper/received?prefix=d-big.2.")).json<any[]>();
      return got.length === 1 && got[0].body.row.id === 5;
    });
  });
});

describe("an http destination nobody answers", () => {
  it("retries, puts rows in the dead lane after retryFor, and replay sends them again under the same ids", async () => {
    await createStream("d-dead", base);
    // Port 1 refuses connections: every attempt fails.
    expect((await call("PUT", D("d-dead", "h"), { type: "http", url: "http://127.0.0.1:1/hook", retryFor: "2 seconds", timeout: "1 second" })).status).toBe(
      201,
    );
    await post(
      "d-dead",
      [
        { id: 1, ts: T },
        { id: 2, ts: T },
        { id: 1, ts: T },
      ],
      { "idempotency-key": "one" },
    );
    const failing = await until("a failure", async () => {
      const s = destinationSchema.parse(await json(call("GET", D("d-dead", "h"))));
      return s.failing ? s : null;
    });
    expect(failing.lastError).toMatch(/connection|timed out|HTTP/);
    expect(failing.deliveredSeq).toBe(0);
    const dead = await until("the dead lane", async () => {
      const page = deadLaneSchema.parse(await json(call("GET", `${D("d-dead", "h")}/dead`)));
      return page.rows.length === 2 ? page : null;
    });
    expect(dead.rows.map((r) => r.id)).toEqual(["d-dead.1.0", "d-dead.1.1"]);
    expect(dead.rows.map((r) => r.row)).toEqual([
      { id: 1, ts: T },
      { id: 2, ts: T },
    ]);
    expect(dead.rows[0].attempts).toBeGreaterThan(1);
    const s = destinationSchema.parse(await json(call("GET", D("d-dead", "h"))));
    expect(s).toMatchObject({ deliveredSeq: 1, pending: 0, dead: 2 });
    // Replay: the rows leave the dead lane and are tried again (and die again, since nobody answers).
    const replay = await call("POST", `${D("d-dead", "h")}/replay`, { fromSeq: 1 });
    expect(replay.status).toBe(202);
    expect(await replay.json()).toEqual({ fromSeq: 1, fromDead: 2 });
    expect(destinationSchema.parse(await json(call("GET", D("d-dead", "h")))).deliveredSeq).toBe(0);
    const back = await until("the dead lane again", async () => {
      const page = deadLaneSchema.parse(await json(call("GET", `${D("d-dead", "h")}/dead`)));
      return page.rows.length === 2 ? page : null;
    });
    expect(back.rows.map((r) => r.id)).toEqual(["d-dead.1.0", "d-dead.1.1"]);
    expect((await call("POST", `${D("d-dead", "h")}/replay`, { fromSeq: 0 })).status).toBe(400);
  });
});

describe("Workers RPC (EdgeDedup) from another Worker", () => {
  it("ingest answers the HTTP call's outcome for the same batch, and its own batches like HTTP", async () => {
    await createStream("d-rpc", base);
    const rows = [{ id: 1, ts: T }, { id: 2, ts: T }, { id: 1, ts: T }, { ts: T }];
    const http = await post("d-rpc", JSON.stringify(rows), { "idempotency-key": "k1", "x-source": "app", "content-type": "application/json" });
    const again = await rpc("ingest", "d-rpc", rows, { source: "app", batchId: "k1" });
    expect(again.ok).toBe(true);
    expect(again.value).toEqual({ ...http, replayed: true });
    const fresh = await rpc(
      "ingest",
      "d-rpc",
      [
        { id: 3, ts: T },
        { id: 2, ts: T },
      ],
      { source: "app", batchId: "k2" },
    );
    expect(fresh.value).toMatchObject({ batchId: "k2", source: "app", replayed: false, input: 2, emitted: 1, duplicates: 1 });
    expect((await output("d-rpc")).map((r) => r.id)).toEqual([1, 2, 3]);
    const generated = await rpc("ingest", "d-rpc", { id: 4, ts: T });
    expect(generated.value).toMatchObject({ source: "default", emitted: 1 });
    expect(generated.value.batchId).toMatch(/^[0-9a-f-]{36}$/);
    // Refusals carry the HTTP status.
    expect((await rpc("ingest", "d-rpc", [{ id: 9, ts: T }], { source: "app", batchId: "k1" })).message).toMatch(/^422 conflict/);
    expect((await rpc("ingest", "nope", [{ id: 1 }])).message).toMatch(/^404 missing/);
    expect((await rpc("ingest", "d-rpc", "not rows")).message).toMatch(/^400 invalid/);
    expect((await rpc("ingest", "bad/name", [])).message).toMatch(/^400 invalid/);
    // Reads.
    const described = await rpc("describe", "d-rpc");
    expect(described.value).toMatchObject({ stream: "d-rpc", batches: { committed: 3 } });
    expect(described.value).toEqual({ ...(await json(call("GET", "/v1/streams/d-rpc"))), bookkeeping: described.value.bookkeeping });
    expect((await rpc("health", "d-rpc")).value).toMatchObject({ stream: "d-rpc", status: expect.stringMatching(/ok|warn|critical/) });
    expect((await rpc("describe", "nope")).value).toBeNull();
  });

  it("a refusal's message starts with its status and kind, its fields come along; tryIngest answers the same refusal as a value", async () => {
    await createStream("d-rpc-refused", base);
    await rpc("ingest", "d-rpc-refused", [{ id: 1, ts: T }], { batchId: "r1" });
    const cases: [unknown[], number, string, RegExp][] = [
      [["nope", [{ id: 1 }]], 404, "missing", /^stream "nope" does not exist; create it with PUT \/v1\/streams\/nope$/],
      [
        ["d-rpc-refused", [{ id: 2, ts: T }], { batchId: "r1" }],
        422,
        "conflict",
        /^batch id "r1" from source "default" was already used with a different body$/,
      ],
      [["d-rpc-refused", "not rows"], 400, "invalid", /./],
      [["bad/name", []], 400, "invalid", /^stream name "bad\/name" is invalid$/],
    ];
    for (const [args, status, kind, detail] of cases) {
      const thrown = await rpc("ingest", ...args);
      expect(thrown, JSON.stringify(args)).toMatchObject({ ok: false, name: "Error", status, kind, detail: expect.stringMatching(detail) });
      expect(thrown.message).toBe(`${status} ${kind}: ${thrown.detail}`);
      const answered = await rpc("tryIngest", ...args);
      expect(answered, JSON.stringify(args)).toEqual({ ok: true, value: { ok: false, status, kind, detail: thrown.detail } });
    }
    expect((await rpc("describe", "bad/name")).message).toBe('400 invalid: stream name "bad/name" is invalid');
    const fine = await rpc("tryIngest", "d-rpc-refused", [{ id: 3, ts: T }], { batchId: "r2" });
    expect(fine.value).toMatchObject({ ok: true, outcome: { batchId: "r2", replayed: false, emitted: 1 } });
    expect((await rpc("tryIngest", "d-rpc-refused", [{ id: 3, ts: T }], { batchId: "r2" })).value).toEqual({
      ok: true,
      outcome: { ...fine.value.outcome, replayed: true },
    });
  });
});

describe("past the idempotency window", () => {
  it("a replay re-sends commits the ledger has forgotten, read from the committed manifest", async () => {
    await createStream("d-win", { ...base, watermarkDelay: "1 minute", idempotencyWindow: "1 minute" });
    expect((await call("PUT", D("d-win", "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
    await post(
      "d-win",
      [
        { id: 1, ts: T },
        { id: 2, ts: T },
      ],
      { "idempotency-key": "w1" },
    );
    await post("d-win", [{ id: 3, ts: T + 600_000 }], { "idempotency-key": "w2" });
    await post("d-win", [{ id: 4, ts: T + 1_200_000 }], { "idempotency-key": "w3" }); // the watermark passes w1 and w2
    // The consumer keeps each message by its id, with how many times it arrived.
    const received = async () =>
      Object.fromEntries(
        (await (await helper.fetch("http://helper/received?prefix=d-win.")).json<any[]>()).map((m) => [m.body.id as string, m.arrivals as number]),
      );
    const ids = ["d-win.1.0", "d-win.1.1", "d-win.2.0", "d-win.3.0"];
    await until("the first deliveries", async () => (Object.keys(await received()).length >= 4 ? true : null));
    expect(await received()).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    // Age the commits past the window; the alarm publishes the manifest and forgets w1 and w2 (the newest group stays).
    const coordinator = env.COORDINATOR.getByName("d-win");
    await ageCommits("d-win", 120_000);
    await runDurableObjectAlarm(coordinator);
    await runDurableObjectAlarm(coordinator);
    expect((await json(call("GET", "/v1/streams/d-win"))).bookkeeping.batchesRemembered).toBe(1);
    expect((await call("POST", `${D("d-win", "q")}/replay`, { fromSeq: 1 })).status).toBe(202);
    const again = await until("the replayed deliveries", async () => {
      const r = await received();
      return ids.every((id) => r[id] >= 2) ? r : null;
    });
    // Every row once more, under the same ids: the forgotten commits' from the manifest, the remembered one's from the index.
    expect(again).toEqual(Object.fromEntries(ids.map((id) => [id, 2])));
  });
});

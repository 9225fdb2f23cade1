import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Coordinator } from "../../src/coordinator/coordinator";
import type { CommitRequest } from "../../src/coordinator/protocol";
import { parseStreamConfig, type StreamConfig } from "../../src/stream/config";
import { at, call, createStream, json, post } from "./helpers";

let n = 0;
function config(body: Record<string, unknown>): StreamConfig {
  const r = parseStreamConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", ...body });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.config;
}
async function stream(body: Record<string, unknown> = {}) {
  const name = `coord-${++n}`;
  const stub = env.COORDINATOR.getByName(name) as DurableObjectStub<Coordinator>;
  expect((await stub.configure(name, config(body))).status).toBe("created");
  return { name, stub };
}
const body = (hash: string) => ({ hash, bytes: 10, rows: 1 });
const ADMIN = { kind: "admin" } as const;
const counts = { input: 1, emitted: 1, duplicates: 0, late: 0, rejected: [] };
function commit(source: string, batchId: string, maxEventTime: number | null): CommitRequest {
  return { source, batchId, maxEventTime, counts, touched: [], objects: { data: null, late: null, rejected: null }, startedAt: Date.now() };
}

describe("Coordinator", () => {
  it("creates, keeps, updates mutable fields and refuses to change bound ones", async () => {
    const { name, stub } = await stream();
    expect((await stub.configure(name, config({}))).status).toBe("unchanged");
    expect((await stub.configure(name, config({ watermarkDelay: "10 minutes" }))).status).toBe("updated");
    const r = await stub.configure(name, config({ key: ["id", "ts"], partitions: 4 }));
    expect(r).toMatchObject({ status: "conflict", changed: ["key", "partitions"] });
  });

  it("records a batch: replay returns the outcome, another body is a conflict, in-flight is busy", async () => {
    const { stub } = await stream();
    const run = await stub.begin("s", "b1", body("h1"), ADMIN);
    expect(run).toMatchObject({ kind: "run", watermark: 0 });
    expect(await stub.begin("s", "b1", body("h1"), ADMIN)).toMatchObject({ kind: "busy" });
    expect(await stub.begin("s", "b1", body("other"), ADMIN)).toEqual({ kind: "conflict" });
    const outcome = await stub.commit(commit("s", "b1", at(10, 0)));
    expect(outcome).toMatchObject({ replayed: false, watermark: 0, watermarkAfter: at(9, 55) });
    const replay = await stub.begin("s", "b1", body("h1"), ADMIN);
    expect(replay).toEqual({ kind: "replay", source: "s", outcome: { ...outcome, replayed: true } });
    // A second commit of the same batch (a racing attempt) changes nothing.
    expect(await stub.commit(commit("s", "b1", at(23, 0)))).toEqual({ ...outcome, replayed: true });
    expect((await stub.describe())!.watermark).toBe(at(9, 55));
    // The same batch id from another source is another batch.
    expect(await stub.begin("t", "b1", body("h1"), ADMIN)).toMatchObject({ kind: "run" });
  });

  it("a batch resumed after a failure is judged by the watermark of its first begin", async () => {
    const { stub } = await stream();
    await stub.begin("s", "slow", body("h"), ADMIN);
    await stub.release("s", "slow");
    await stub.begin("s", "fast", body("h"), ADMIN);
    await stub.commit(commit("s", "fast", at(10, 0)));
    const resumed = await stub.begin("s", "slow", body("h"), ADMIN);
    expect(resumed).toMatchObject({ kind: "run", watermark: 0 });
    const next = await stub.begin("s", "later", body("h"), ADMIN);
    expect(next).toMatchObject({ kind: "run", watermark: at(9, 55) });
  });

  it("min policy: a declared source that never sends holds the watermark at 0; max does not", async () => {
    for (const [policy, expected] of [["min", 0], ["max", at(9, 55)]] as const) {
      const { stub } = await stream({ watermarkPolicy: policy, sources: { a: {}, b: {} } });
      await stub.begin("a", "1", body("h"), ADMIN);
      await stub.commit(commit("a", "1", at(10, 0)));
      const d = (await stub.describe())!;
      expect(d.watermark).toBe(expected);
      expect(d.sources.b).toEqual({ maxEventTime: null, watermark: 0, lastBatchAt: null, declared: true, idle: false });
    }
  });

  it("per-source delays; the global watermark never decreases", async () => {
    const { stub } = await stream({ sources: { a: {}, b: { watermarkDelay: "1 hour" } } });
    for (const [s, id, t] of [["a", "1", at(12, 0)], ["b", "1", at(12, 0)]] as const) {
      await stub.begin(s, id, body("h"), ADMIN);
      await stub.commit(commit(s, id, t));
    }
    expect((await stub.describe())!.watermark).toBe(at(11, 0)); // min(11:55, 11:00)
    await stub.begin("b", "2", body("h"), ADMIN);
    await stub.commit(commit("b", "2", at(11, 30))); // older data does not move b back
    expect((await stub.describe())!.watermark).toBe(at(11, 0));
  });

  it("a source whose rows were all rejected does not join the watermark", async () => {
    const { stub } = await stream();
    await stub.begin("a", "1", body("h"), ADMIN);
    await stub.commit(commit("a", "1", at(10, 0)));
    await stub.begin("junk", "1", body("h"), ADMIN);
    await stub.commit(commit("junk", "1", null));
    await stub.begin("a", "2", body("h"), ADMIN);
    expect((await stub.commit(commit("a", "2", at(11, 0)))).watermarkAfter).toBe(at(10, 55));
  });
});

describe("prompt eviction", () => {
  it("partitions that receive no rows evict once the watermark moves", async () => {
    await createStream("evict", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 4 });
    const rows = Array.from({ length: 40 }, (_, i) => ({ id: `k${i}`, ts: at(10, 0) }));
    await post("evict", rows);
    expect((await json(call("GET", "/v1/streams/evict"))).state.rows).toBe(40);
    // One row from one key moves the watermark to 10:55: every 10:00 key expired (10:05).
    await post("evict", { id: "late-riser", ts: at(11, 0) });
    // The coordinator's alarm fans the watermark out (it may have fired on its own already).
    await runDurableObjectAlarm(env.COORDINATOR.getByName("evict"));
    const d = await json(call("GET", "/v1/streams/evict"));
    expect(d.state.rows).toBe(1);
    for (let p = 0; p < 4; p++) {
      const s = await json(call("GET", `/v1/streams/evict/state?partition=${p}`));
      for (const k of s.keys) expect(k.expiresAt).toBeGreaterThan(d.watermark);
    }
    const progress = (await json(call("GET", "/v1/streams/evict/progress"))).progress;
    expect(progress.map((p: any) => p.numRowsUpdated)).toEqual([40, 1]);
  });
});

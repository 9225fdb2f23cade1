import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Coordinator } from "../../../src/coordinator/coordinator";
import type { IngestRequest, IngestResult } from "../../../src/coordinator/protocol";
import { armFault, batchFaultKey } from "../../../src/instrument/faults";
import type { BatchOutcome } from "../../../src/stream/batch-outcome";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { at, call, createStream, json, post } from "../helpers";

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
const ADMIN = { kind: "admin" } as const;
/** A batch as the Worker hands it to ingest(): one row at `ts` (null: without its event time, so rejected), under the identity (body hash) given. */
function request(source: string, batchId: string, ts: number | null, identity = `${source}/${batchId}`): IngestRequest {
  return { sourceHeader: source, batchId, auth: ADMIN, rows: [ts === null ? { id: batchId } : { id: batchId, ts }], identity, bytes: 10 };
}
/** One batch through the Coordinator's ingest, as production sends it: its outcome once committed. */
async function ingest(stub: DurableObjectStub<Coordinator>, source: string, batchId: string, ts: number | null): Promise<BatchOutcome> {
  const r = await stub.ingest(request(source, batchId, ts));
  if (r.kind !== "done") throw new Error(`${source}/${batchId}: ${JSON.stringify(r)}`);
  return r.outcome;
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
    const first = await runInDurableObject(stub, async (c) => {
      // Admission is synchronous: the first request holds its id (leased, running) before the next call starts.
      const running = c.ingest(request("s", "b1", at(10, 0), "h1"));
      // A request for the id in flight that may not wait for it (its deadline passed) is told it is busy.
      expect(await c.ingestMany([request("s", "b1", at(10, 0), "h1")], 0)).toMatchObject([{ kind: "busy", source: "s" }]);
      // Another body under the id in flight waits for the run, then is a conflict: it never runs.
      const other = c.ingest(request("s", "b1", at(10, 0), "other"));
      const done = await running;
      expect(await other).toEqual({ kind: "conflict" });
      return done;
    });
    expect(first).toMatchObject({ kind: "done", outcome: { replayed: false, watermark: 0, watermarkAfter: at(9, 55) } });
    const outcome = (first as Extract<IngestResult, { kind: "done" }>).outcome;
    expect(await stub.ingest(request("s", "b1", at(10, 0), "h1"))).toEqual({ kind: "replay", source: "s", outcome: { ...outcome, replayed: true } });
    expect(await stub.ingest(request("s", "b1", at(10, 0), "other"))).toEqual({ kind: "conflict" });
    // A second attempt of the same batch (a racing one, its rows read later) changes nothing.
    expect(await stub.ingest(request("s", "b1", at(23, 0), "h1"))).toEqual({ kind: "replay", source: "s", outcome: { ...outcome, replayed: true } });
    expect((await stub.describe())!.watermark).toBe(at(9, 55));
    // The same batch id from another source is another batch.
    expect(await ingest(stub, "t", "b1", at(10, 0))).toMatchObject({ source: "t", replayed: false });
  });

  it("a batch resumed after a failure is judged by the watermark of its first begin", async () => {
    const { name, stub } = await stream();
    // The first attempt fails after its begin (its partitions decided, nothing written), as a request with X-Test-Fault would.
    await runInDurableObject(stub, async (c) => {
      armFault(batchFaultKey(name, "slow"), "after-decide");
      await expect(c.ingest(request("s", "slow", at(9, 0)))).rejects.toThrow(/injected fault at after-decide/);
    });
    expect(await ingest(stub, "s", "fast", at(10, 0))).toMatchObject({ watermark: 0, watermarkAfter: at(9, 55) });
    // Its retry is judged by watermark 0 (its 9:00 row is not late); a new batch by 9:55 (its 9:00 row is).
    expect(await ingest(stub, "s", "slow", at(9, 0))).toMatchObject({ replayed: false, watermark: 0, emitted: 1, late: 0 });
    expect(await ingest(stub, "s", "later", at(9, 0))).toMatchObject({ replayed: false, watermark: at(9, 55), emitted: 0, late: 1 });
  });

  it("min policy: a declared source that never sends holds the watermark at 0; max does not", async () => {
    for (const [policy, expected] of [
      ["min", 0],
      ["max", at(9, 55)],
    ] as const) {
      const { stub } = await stream({ watermarkPolicy: policy, sources: { a: {}, b: {} } });
      await ingest(stub, "a", "1", at(10, 0));
      const d = (await stub.describe())!;
      expect(d.watermark).toBe(expected);
      expect(d.sources.b).toEqual({ maxEventTime: null, watermark: 0, lastBatchAt: null, declared: true, idle: false });
    }
  });

  it("per-source delays; the global watermark never decreases", async () => {
    const { stub } = await stream({ sources: { a: {}, b: { watermarkDelay: "1 hour" } } });
    for (const [s, id, t] of [
      ["a", "1", at(12, 0)],
      ["b", "1", at(12, 0)],
    ] as const)
      await ingest(stub, s, id, t);
    expect((await stub.describe())!.watermark).toBe(at(11, 0)); // min(11:55, 11:00)
    await ingest(stub, "b", "2", at(11, 30)); // older data does not move b back
    expect((await stub.describe())!.watermark).toBe(at(11, 0));
    expect((await stub.describe())!.sources.b.maxEventTime).toBe(at(12, 0));
    await ingest(stub, "c", "1", at(10, 0)); // a new source behind the others does not move the watermark back
    expect((await stub.describe())!.watermark).toBe(at(11, 0));
  });

  it("a source whose rows were all rejected does not join the watermark", async () => {
    const { stub } = await stream();
    await ingest(stub, "a", "1", at(10, 0));
    expect(await ingest(stub, "junk", "1", null)).toMatchObject({ input: 1, emitted: 0, rejected: [{ index: 0 }] });
    expect((await ingest(stub, "a", "2", at(11, 0))).watermarkAfter).toBe(at(10, 55));
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

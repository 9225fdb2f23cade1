/**
 * The outbox (src/output/outbox.ts): small micro-batches commit their lanes into the
 * Coordinator's SQLite and a flush writes many of them as one object per
 * lane; readers see the same rows before and after, and a flush that dies
 * half way, retried, writes nothing twice.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Outbox } from "../../../src/output/outbox";
import { at, call, createStream, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 4, schema: { n: "int" } };

async function objects(stream: string): Promise<string[]> {
  return (await env.SINK.list({ prefix: `streams/${stream}/` })).objects.map((o) => o.key).sort();
}
async function lanes(stream: string) {
  const text = async (path: string) => (await call("GET", `/v1/streams/${stream}/${path}`)).text();
  return {
    output: await text("output"),
    late: await text("late"),
    rejected: await text("rejected"),
    conflicts: await text("conflicts"),
    after2: await text("output?after=2"),
  };
}

describe("the outbox", () => {
  it("small batches write no objects until a flush; readers see the same rows before and after", async () => {
    await createStream("ob1", base);
    await post("ob1", [
      { id: "A", ts: at(10, 0) },
      { id: "B", ts: at(10, 0), n: "x" },
    ]);
    await post("ob1", [
      { id: "C", ts: at(11, 0) },
      { id: "A", ts: at(10, 1), n: 7 },
    ]);
    await post("ob1", [
      { id: "D", ts: at(10, 0) },
      { id: "E", ts: at(11, 2) },
    ]); // D is late (wm 10:55)
    expect(await objects("ob1")).toEqual([]);
    const before = await lanes("ob1");
    expect(
      before.output
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).id),
    ).toEqual(["A", "C", "E"]);
    expect(before.late).toMatch(/"D"/);
    expect(before.rejected).toMatch(/n: not an int/);

    const flushed = await runInDurableObject(env.COORDINATOR.getByName("ob1"), (c) => c.flush());
    expect(flushed).toBe(3);
    const keys = await objects("ob1");
    expect(keys.filter((k) => k.includes("/data/"))).toHaveLength(1);
    expect(keys.filter((k) => k.includes("/_commits/"))).toHaveLength(1);
    expect(before.conflicts).toMatch(/"kept":\{"batchId"/); // A@10:01 has an n the kept A@10:00 has not (DESIGN §11; its other event time alone would not be a conflict)
    expect(keys).toHaveLength(5); // data, late, rejected, conflicts, marker
    expect(await lanes("ob1")).toEqual(before);
    const marker = await (await env.SINK.get(keys.find((k) => k.includes("/_commits/"))!))!.json<any>();
    expect(marker.batches).toHaveLength(3);
  });

  it("a flush that dies before recording where it wrote, retried, writes the same objects once", async () => {
    await createStream("ob2", base);
    for (let i = 0; i < 5; i++) await post("ob2", { id: `k${i}`, ts: at(10, i) });
    const before = await lanes("ob2");
    await runInDurableObject(env.COORDINATOR.getByName("ob2"), async (_c, state) => {
      const outbox = new Outbox(state.storage.sql);
      let calls = 0;
      // The plan is recorded, the objects are written, then the process dies.
      const dying = <T>(fn: () => T): T => {
        if (++calls === 2) throw new Error("crash before recording the flush");
        return state.storage.transactionSync(fn);
      };
      await expect(outbox.flush(env.SINK, { stream: "ob2", epoch: await epochOf(state) }, dying)).rejects.toThrow(/crash/);
    });
    expect(await lanes("ob2")).toEqual(before); // still read from the outbox
    const written = await objects("ob2");
    expect(written).toHaveLength(2); // data + marker: nothing refers to them yet
    expect(await runInDurableObject(env.COORDINATOR.getByName("ob2"), (c) => c.flush())).toBe(5);
    expect(await objects("ob2")).toEqual(written); // the retry wrote the same keys (create-only), nothing more
    expect(await lanes("ob2")).toEqual(before);
  });

  it("a large micro-batch writes its own objects at once", async () => {
    await createStream("ob3", base);
    const rows = Array.from({ length: 3_000 }, (_, i) => ({ id: `k${i}`, ts: at(10, 0), pad: "x".repeat(100) }));
    expect((await post("ob3", rows)).emitted).toBe(3_000);
    expect((await objects("ob3")).filter((k) => k.includes("/data/"))).toHaveLength(1);
    expect((await lanes("ob3")).output.trim().split("\n")).toHaveLength(3_000);
  });

  it("the alarm flushes once the outbox holds FLUSH_BYTES", async () => {
    await createStream("ob5", base);
    for (let b = 0; b < 6; b++) {
      const rows = Array.from({ length: 1_400 }, (_, i) => ({ id: `b${b}-${i}`, ts: at(10, 0), pad: "y".repeat(120) })); // ~200 KB a batch
      await post("ob5", rows);
    }
    const stub = env.COORDINATOR.getByName("ob5");
    const due = await runInDurableObject(stub, (_c, state) => state.storage.getAlarm());
    expect(due).not.toBeNull();
    expect(due!).toBeLessThanOrEqual(Date.now() + 1_000); // due now, not in FLUSH_AFTER_MS
    await runDurableObjectAlarm(stub);
    const data = (await objects("ob5")).filter((k) => k.includes("/data/"));
    expect(data.length).toBeGreaterThanOrEqual(1);
    expect((await lanes("ob5")).output.trim().split("\n")).toHaveLength(6 * 1_400);
  });

  it("what is waiting, as each commit asks it, is what a scan of the outbox finds: after commits, a flush, and more commits", async () => {
    await createStream("ob7", base);
    const stub = env.COORDINATOR.getByName("ob7");
    // The Coordinator's own answer (kept up to date by its commits) against a fresh Outbox over the same storage (a scan).
    const both = () =>
      runInDurableObject(stub, (c, state) => [
        (c as unknown as { stores: { outbox: Outbox } }).stores.outbox.pending(),
        new Outbox(state.storage.sql).pending(),
      ]);
    for (let i = 0; i < 3; i++) await post("ob7", [{ id: `a${i}`, ts: at(10, 0), pad: "z".repeat(i * 50) }], { "idempotency-key": `w${i}` });
    const [kept, scanned] = await both();
    expect(kept.bytes).toBeGreaterThan(0);
    expect(kept).toEqual(scanned);
    await runInDurableObject(stub, (c) => c.flush());
    expect((await both())[0]).toEqual({ bytes: 0, oldest: null });
    await Promise.all([0, 1, 2, 3].map((i) => post("ob7", [{ id: `b${i}`, ts: at(10, 1) }], { "idempotency-key": `x${i}` })));
    const [after, fresh] = await both();
    expect(after).toEqual(fresh);
    expect(after.bytes).toBeGreaterThan(0);
  });

  it("many concurrent single-event requests share objects", async () => {
    await createStream("ob4", base);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => post("ob4", { id: `k${i % 50}`, ts: at(10, 0) }, { "idempotency-key": `r${i}` })));
    expect(answers.reduce((n, a) => n + a.emitted, 0)).toBe(50);
    await runInDurableObject(env.COORDINATOR.getByName("ob4"), (c) => c.flush());
    expect((await objects("ob4")).filter((k) => k.includes("/data/"))).toHaveLength(1);
    expect((await lanes("ob4")).output.trim().split("\n")).toHaveLength(50);
  });
});

async function epochOf(state: DurableObjectState): Promise<string> {
  return state.storage.sql.exec<{ epoch: string }>("SELECT epoch FROM meta").one().epoch;
}

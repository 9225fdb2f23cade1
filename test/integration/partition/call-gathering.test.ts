import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Partition } from "../../../src/partition/partition";
import type { GroupApplyRequest } from "../../../src/partition/protocol";
import type { DedupSettings } from "../../../src/stream/dedup";
import { rowColumns } from "../../../src/stream/row-columns";

const settings: DedupSettings = { mode: "within-watermark", delay: 100, hasEventTime: true };

let n = 0;
const fresh = () => env.PARTITION.getByName(`gather-${++n}/0`) as DurableObjectStub<Partition>;

/** One shard's call: micro-batch `group` with one batch of these keys (event time 1000). */
const call = (group: string, keys: string[], gather = true): GroupApplyRequest => ({
  epoch: "e1",
  group,
  watermark: 0,
  entries: [{ batch: `s\n${group}`, settings, resumed: false, rows: rowColumns(keys.map((key, index) => ({ index, key, eventTime: 1000 }))) }],
  ...(gather ? { gather: true as const } : {}),
});

/** The calls made at once inside the object, with the rows their statements wrote. */
const atOnce = (p: DurableObjectStub<Partition>, reqs: GroupApplyRequest[]) =>
  runInDurableObject(p, async (obj) => {
    const o = obj as unknown as { sql: SqlStorage };
    const real = o.sql;
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    o.sql = new Proxy(real, {
      get: (t, prop) =>
        prop === "exec"
          ? (...a: Parameters<SqlStorage["exec"]>) => {
              const c = t.exec(...a);
              cursors.push(c);
              return c;
            }
          : Reflect.get(t, prop, t),
    });
    try {
      const answers = await Promise.allSettled(reqs.map((r) => obj.applyGroup(r)));
      await new Promise((r) => setTimeout(r, 0));
      return { answers, written: cursors.reduce((sum, c) => sum + c.rowsWritten, 0) };
    } finally {
      o.sql = real;
    }
  });

describe("a partition called by several shards at once", () => {
  it("judges the calls of one turn in one transaction, in order: the meta row is written once, and each call has the decisions it would have alone", async () => {
    // Each partition has judged a call before (its first use writes its fresh meta row too).
    const p = fresh();
    const q = fresh();
    for (const o of [p, q]) await o.applyGroup(call("g0", ["Z"], false));
    const { answers, written } = await atOnce(p, [call("g1", ["A", "B"]), call("g2", ["B", "C"]), call("g3", ["A", "D", "D"])]);
    expect(answers.map((a) => (a.status === "fulfilled" ? a.value.decisions : a.reason))).toEqual([["ee"], ["de"], ["ded"]]);
    expect(written).toBe(1); // the meta row, once for the three
    // Called one after another (no gathering), the same decisions: each its own transaction and meta row.
    const alone = await atOnce(q, [call("g1", ["A", "B"], false), call("g2", ["B", "C"], false), call("g3", ["A", "D", "D"], false)]);
    expect(alone.answers.map((a) => (a.status === "fulfilled" ? a.value.decisions : a.reason))).toEqual([["ee"], ["de"], ["ded"]]);
    expect(alone.written).toBe(3);
    // Stored: after a restart, each kept key names the batch that kept it, and each micro-batch's ledger entry is there (a retry replays it).
    await evictDurableObject(p);
    for (const [key, batch, dropped] of [
      ["A", "s\ng1", 1],
      ["B", "s\ng1", 1],
      ["C", "s\ng2", 0],
      ["D", "s\ng3", 1],
    ] as const)
      expect((await p.lookup("e1", key))[0]).toMatchObject({ batch, dropped });
    const retried = await p.applyGroup({ ...call("g2", ["B", "C"]), entries: [{ ...call("g2", ["B", "C"]).entries[0], resumed: true }] });
    expect(retried).toMatchObject({ decisions: ["de"], replayed: true, inserted: 0 });
    expect((await p.describe("e1")).rows).toBe(5);
  });

  it("a call that fails fails alone: the calls gathered with it are judged again each by itself, and nothing of the failed one is kept", async () => {
    const p = fresh();
    const broken = { ...call("g2", ["X"]), entries: [{ ...call("g2", ["X"]).entries[0], rows: null as never }] };
    const { answers } = await atOnce(p, [call("g1", ["A"]), broken, call("g3", ["A", "B"])]);
    expect(answers[0]).toMatchObject({ status: "fulfilled", value: { decisions: ["e"] } });
    expect(answers[1].status).toBe("rejected");
    expect(answers[2]).toMatchObject({ status: "fulfilled", value: { decisions: ["de"] } });
    await evictDurableObject(p);
    expect((await p.describe("e1")).rows).toBe(2);
    expect(await p.lookup("e1", "X")).toEqual([]);
    expect((await p.lookup("e1", "A"))[0]).toMatchObject({ batch: "s\ng1", dropped: 1 });
  });

  it("a fence set while calls gather stops the calls after it: they answer fenced, judging nothing", async () => {
    const p = fresh();
    const fenced = await runInDurableObject(p, async (obj) => {
      const first = obj.applyGroup(call("g1", ["A"]));
      obj.fence("e1", { version: 2, partitions: 16 });
      return first;
    });
    expect(fenced).toMatchObject({ decisions: [], fenced: { version: 2, partitions: 16 } });
    expect((await p.describe("e1")).rows).toBe(0);
  });
});

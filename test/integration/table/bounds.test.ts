/**
 * Issue 14 through the Worker and the Coordinator: rows a table cannot take
 * are rejected by index at ingest (never in the output or the table), and a
 * table append that fails takes nothing else with it: the alarm still
 * evicts, flushes and publishes the manifest, the failure is reported on
 * GET …/table and …/health, and the append is retried with backoff.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { r2Store, readTableSnapshot } from "../../../src/table";
import { loadTable } from "../../../src/table/commit";
import { currentSchema } from "../../../src/table/metadata";
import { at, call, client, createStream, json, output, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", partitions: 2, schema: { id: "string", ts: "timestamp" } };
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

async function tableColumns(stream: string): Promise<string[]> {
  const { table } = (await loadTable(r2Store(env.SINK), stream))!;
  return currentSchema(table)!.fields.map((f) => f.name);
}

describe("rows the table cannot take", () => {
  it("are rejected by index with the reason, and reach neither the output nor the table", async () => {
    await createStream("tb1", { ...base, table: { format: "iceberg", maxColumns: 6 } });
    const body = JSON.stringify([
      { id: "a", ts: at(10, 0), x: 1, y: 2 },
      { id: "b", ts: at(10, 0), "": 1 },
      { id: "c", ts: at(10, 0), "nul\u0000": 1 },
      { id: "d", ts: at(10, 0), Q: 1, q: 2 },
      { id: "e", ts: at(10, 0), X: 1 },
      { id: "f", ts: at(10, 0), p: 1, r: 2, s: 3 },
    ]).replace('"id":"b"', '"__proto__":{"polluted":true},"id":"b"');
    const first = await post("tb1", body, { "content-type": "application/json" });
    expect(first).toMatchObject({ input: 6, emitted: 1 });
    expect(first.rejected).toEqual([
      { index: 1, error: 'field "__proto__" cannot be a table column' },
      { index: 2, error: 'field "nul\\u0000" has a control character' },
      { index: 3, error: 'fields "Q" and "q" differ only in case: a table column cannot tell them apart' },
      { index: 4, error: 'field "X" differs only in case from the table\'s column "x"' },
      { index: 5, error: 'adds 3 new columns ("p", "r", "s") to a table of 4; at most 6 ("table.maxColumns")' },
    ]);
    await tick();
    // The next request counts the columns the first one committed (x, y): two more fit, a third does not.
    const second = await post("tb1", [
      { id: "g", ts: at(10, 1), z: 1, w: 2 },
      { id: "h", ts: at(10, 1), v: 1 },
      { id: "i", ts: at(10, 1), x: 3 },
    ]);
    expect(second).toMatchObject({ input: 3, emitted: 2 });
    expect(second.rejected).toEqual([{ index: 1, error: 'adds 1 new column ("v") to a table of 6; at most 6 ("table.maxColumns")' }]);
    expect((await output("tb1")).map((r) => r.id)).toEqual(["a", "g", "i"]);
    expect((await client.rejected("tb1")).rows.map((r: any) => r.index)).toEqual([1, 2, 3, 4, 5, 1]);

    await runDurableObjectAlarm(env.COORDINATOR.getByName("tb1"));
    expect(await tableColumns("tb1")).toEqual(["id", "ts", "x", "y", "z", "w"]);
    const table = await json(call("GET", "/v1/streams/tb1/table"));
    expect(table.snapshot.summary).toMatchObject({ "total-records": "3" });
    expect(table.snapshot.summary["edge-dedup.dropped-fields"]).toBeUndefined();
    expect(table.publishing).toMatchObject({ publishedSeq: 2, committedSeq: 2, failing: false, failures: 0, lastError: null });
  });

  it("the example in docs/guides/table-output.md answers as documented", async () => {
    await createStream("wide", { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", table: { format: "iceberg", maxColumns: 4 } });
    const r = await post("wide", [
      { id: "a", ts: 1767261600000, x: 1 },
      { id: "b", ts: 1767261600000, y: 1, z: 2 },
      { id: "c", ts: 1767261600000, X: 1 },
      { id: "d", ts: 1767261600000, "": 1 },
    ]);
    expect(r).toMatchObject({ input: 4, emitted: 1, duplicates: 0, late: 0 });
    expect(r.rejected).toEqual([
      { index: 1, error: 'adds 2 new columns ("y", "z") to a table of 3; at most 4 ("table.maxColumns")' },
      { index: 2, error: 'field "X" differs only in case from the table\'s column "x"' },
      { index: 3, error: "an empty field name cannot be a table column" },
    ]);
  });

  it("a stream without a table takes any field name, as before", async () => {
    await createStream("tb2", base);
    const r = await post("tb2", [{ id: "a", ts: at(10, 0), "": 1, A: 1, a: 2 }]);
    expect(r).toMatchObject({ emitted: 1, rejected: [] });
  });

  it("the config refuses a cap below the declared columns", async () => {
    const r = await call("PUT", "/v1/streams/tb3", { ...base, table: { format: "iceberg", maxColumns: 1 } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(await r.json())).toContain("table.maxColumns");
  });
});

describe("the column cap across batches", () => {
  it("a batch retried after a crash is judged by the columns known when it began: a row taken then is taken again", async () => {
    const name = "tbretry";
    await createStream(name, { ...base, table: { format: "iceberg", maxColumns: 4 } });
    const crashed = [{ id: "x", ts: at(10, 0), p: 1 }];
    // The partitions decide (and remember) row x, then the attempt dies before its commit.
    const first = await call("POST", `/v1/streams/${name}/events`, crashed, { "idempotency-key": "x1", "x-test-fault": "after-decide" });
    expect(first.status).toBe(500);
    await tick();
    // Meanwhile another batch takes the table to its cap.
    expect(await post(name, [{ id: "y", ts: at(10, 1), q: 1, r: 2 }])).toMatchObject({ emitted: 1, rejected: [] });
    await tick();
    // The retry plans as the first attempt did: x is emitted, not rejected (that would lose it: its key is remembered).
    expect(await post(name, crashed, { "idempotency-key": "x1" })).toMatchObject({ emitted: 1, duplicates: 0, rejected: [] });
    expect((await output(name)).map((r) => r.id)).toEqual(["y", "x"]);
    // A new batch is judged by the columns known now.
    expect((await post(name, [{ id: "z", ts: at(10, 2), s: 1 }])).rejected).toEqual([
      { index: 0, error: 'adds 1 new column ("s") to a table of 5; at most 4 ("table.maxColumns")' },
    ]);
    // The table itself never goes past the cap: the field that does not fit is left out, and counted.
    await runDurableObjectAlarm(env.COORDINATOR.getByName(name));
    expect(await tableColumns(name)).toEqual(["id", "ts", "q", "r"]);
    const table = await json(call("GET", `/v1/streams/${name}/table`));
    expect(table.snapshot.summary).toMatchObject({ "total-records": "2", "edge-dedup.dropped-fields": "1" });
  });
});

describe("a table append that fails", () => {
  it("does not stop eviction, the flush or the manifest; it is reported and retried with backoff", async () => {
    const name = "tbfail";
    await createStream(name, { ...base, table: { format: "iceberg" } });
    const stub = env.COORDINATOR.getByName(name);
    await post(name, [{ id: "a", ts: at(10, 0) }]);
    await runDurableObjectAlarm(stub);
    const v1 = (await readTableSnapshot(r2Store(env.SINK), name))!.snapshot;
    // Break the table for real: the current snapshot's manifest list goes missing, so the next append throws.
    const listKey = `tables/${name}/${v1["manifest-list"].split(`/tables/${name}/`)[1]}`;
    const saved = await (await env.SINK.get(listKey))!.arrayBuffer();
    await env.SINK.delete(listKey);

    // 10:10 moves the watermark to 10:09: key "a" (10:00 + 1 minute) is due for eviction.
    await post(name, [{ id: "b", ts: at(10, 10) }]);
    expect((await json(call("GET", `/v1/streams/${name}`))).state.rows).toBe(2);
    await runInDurableObject(stub, (c) => c.flush());
    await runDurableObjectAlarm(stub);

    expect((await json(call("GET", `/v1/streams/${name}`))).state.rows).toBe(1);
    const manifest = (await env.SINK.list({ prefix: `streams/${name}/_manifest/` })).objects.map((o) => o.key);
    expect(manifest.at(-1)).toMatch(/0{11}2\.json$/);
    const table = await json(call("GET", `/v1/streams/${name}/table`));
    expect(table.snapshot["snapshot-id"]).toBe(v1["snapshot-id"]);
    expect(table.files).toBeNull(); // its manifest list is missing: the snapshot is still shown
    expect(table.publishing).toMatchObject({ publishedSeq: 1, committedSeq: 2, failing: true });
    expect(table.publishing.failures).toBeGreaterThanOrEqual(1);
    expect(table.publishing.lastError).toMatch(/missing/);
    const health = await client.health(name);
    expect(health.status).toBe("warn");
    expect(health.reasons.find((r) => r.code === "table-failing")?.detail).toMatch(/1 commit\(s\) not in it yet.*missing/);
    // The alarm comes back when the retry is due, not before.
    const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThanOrEqual(table.publishing.nextAttemptAt);

    // Repaired, the retry (once due) appends what waited; the failure is cleared.
    await env.SINK.put(listKey, saved);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, table.publishing.nextAttemptAt - Date.now()) + 10));
    await runDurableObjectAlarm(stub);
    const repaired = await json(call("GET", `/v1/streams/${name}/table`));
    expect(repaired.snapshot.summary).toMatchObject({ "total-records": "2", "edge-dedup.commit-seq": "2" });
    expect(repaired.publishing).toMatchObject({ publishedSeq: 2, committedSeq: 2, failing: false, failures: 0, lastError: null, nextAttemptAt: null });
    expect((await client.health(name)).reasons.map((r) => r.code)).not.toContain("table-failing");
  });
});

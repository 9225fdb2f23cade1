/**
 * What external readers get (src/output/publisher.ts): the committed manifest of the
 * NDJSON output lists exactly the committed rows once they are in R2, and the
 * Iceberg table holds every committed row once, appended by the alarm.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { r2Store, readTableSnapshot } from "../../../src/table";
import { loadTable } from "../../../src/table/commit";
import { currentSchema } from "../../../src/table/metadata";
import { decodeDataFile } from "../../../src/table/parquet";
import { liveDataFiles, readDataFileBytes } from "../../../src/table/snapshot-files";
import { SHARD_SEQ_BASE, shardFor } from "../../../src/stream/shards";
import { at, call, createStream, json, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 3, schema: { id: "string", ts: "timestamp", n: "long" } };

async function manifestText(stream: string): Promise<string> {
  const entries = (await env.SINK.list({ prefix: `streams/${stream}/_manifest/` })).objects.map((o) => o.key).sort();
  let text = "";
  let next = 1;
  for (const key of entries) {
    const entry = await (await env.SINK.get(key))!.json<any>();
    expect(entry.fromSeq).toBe(next); // contiguous, in order
    next = entry.toSeq + 1;
    for (const o of entry.objects) {
      const body = await env.SINK.get(o.key, { range: { offset: o.offset, length: o.length } });
      text += await body!.text();
    }
  }
  return text;
}

async function tableIds(stream: string): Promise<string[]> {
  const store = r2Store(env.SINK);
  const { table } = (await loadTable(store, stream))!;
  const snapshot = (await readTableSnapshot(store, stream))!.snapshot;
  const files = await liveDataFiles(store, stream, table.location, snapshot);
  const rows = await Promise.all(files.map(async (f) => decodeDataFile(currentSchema(table)!, await readDataFileBytes(store, stream, table.location, f))));
  return rows.flat().map((r) => r[0] as string);
}

describe("the committed manifest", () => {
  it("lists what is committed and flushed, in commit order, nothing else", async () => {
    await createStream("pm", base);
    for (let i = 0; i < 4; i++)
      await post("pm", [
        { id: `k${i}`, ts: at(10, i) },
        { id: `k${i}`, ts: at(10, i) },
      ]);
    const stub = env.COORDINATOR.getByName("pm");
    await runDurableObjectAlarm(stub); // nothing flushed yet (young outbox): nothing listed
    expect(await manifestText("pm")).toBe("");
    await runInDurableObject(stub, (c) => c.flush());
    await runDurableObjectAlarm(stub);
    const output = await (await call("GET", "/v1/streams/pm/output")).text();
    expect(await manifestText("pm")).toBe(output);
    expect(output.trim().split("\n")).toHaveLength(4);
    // A large batch writes its objects at once: listed by the next alarm.
    await post(
      "pm",
      Array.from({ length: 2_500 }, (_, i) => ({ id: `big${i}`, ts: at(10, 9), pad: "z".repeat(100) })),
    );
    await runDurableObjectAlarm(stub);
    expect(await manifestText("pm")).toBe(await (await call("GET", "/v1/streams/pm/output")).text());
  });
});

describe("the Iceberg table", () => {
  it("holds every committed row once; a repeated alarm appends nothing", async () => {
    await createStream("pt", { ...base, table: { format: "iceberg" } });
    expect((await call("GET", "/v1/streams/pt/table")).status).toBe(404);
    await post("pt", [
      { id: "a", ts: at(10, 0), n: 1 },
      { id: "b", ts: at(10, 1) },
      { id: "a", ts: at(10, 2) },
    ]);
    await post("pt", [{ id: "c", ts: at(10, 3), extra: { x: 1 } }]);
    const stub = env.COORDINATOR.getByName("pt");
    await runDurableObjectAlarm(stub);
    const first = await json(call("GET", "/v1/streams/pt/table"));
    expect(first.snapshot.summary).toMatchObject({ "total-records": "3", "edge-dedup.commit-seq": "2" });
    expect(first.metadataLocation).toMatch(/tables\/pt\/metadata\/v1\.metadata\.json$/);
    await runDurableObjectAlarm(stub);
    expect((await json(call("GET", "/v1/streams/pt/table"))).snapshot["snapshot-id"]).toBe(first.snapshot["snapshot-id"]);

    await post("pt", [
      { id: "d", ts: at(10, 4) },
      { id: "b", ts: at(10, 5) },
    ]);
    await runDurableObjectAlarm(stub);
    const second = await json(call("GET", "/v1/streams/pt/table"));
    expect(second.snapshot.summary).toMatchObject({ "total-records": "4", "edge-dedup.commit-seq": "3" });
    expect((await tableIds("pt")).sort()).toEqual(["a", "b", "c", "d"]);
  });

  it("with several shards: each shard appends its own commits once, the snapshots carry every shard's record, a publication waits for each", async () => {
    const s = "pt-shards";
    await createStream(s, { ...base, table: { format: "iceberg" }, shards: 3 });
    const stubs = [0, 1, 2].map((k) => env.COORDINATOR.getByName(k === 0 ? s : `${s}#${k}`));
    const ids = (k: number) => {
      const out: string[] = [];
      for (let i = 0; out.length < 2; i++) if (shardFor(`t${i}`, 3) === k) out.push(`t${i}`);
      return out;
    };
    for (let k = 0; k < 3; k++) for (const [n, id] of ids(k).entries()) await post(s, [{ id: `${id}-row`, ts: at(10, n) }], { "idempotency-key": id });
    const before = await json(call("GET", `/v1/streams/${s}/publication`));
    expect(before.committed).toBe(6);
    expect(before.shards.map((x: any) => x.committed)).toEqual([2, SHARD_SEQ_BASE + 2, 2 * SHARD_SEQ_BASE + 2]);
    // Two shards publish; the third has not: the counts over shards and its own figures say so.
    await runDurableObjectAlarm(stubs[2]);
    await runDurableObjectAlarm(stubs[0]);
    const part = await json(call("GET", `/v1/streams/${s}/publication`));
    expect(part.table).toBe(4);
    expect(part.shards[1].table).toBeLessThan(SHARD_SEQ_BASE + 2);
    expect((await tableIds(s)).length).toBe(4);
    await runDurableObjectAlarm(stubs[1]);
    for (const stub of stubs) await runDurableObjectAlarm(stub); // again: nothing appended twice
    const summary = (await json(call("GET", `/v1/streams/${s}/table`))).snapshot.summary;
    expect(summary).toMatchObject({
      "total-records": "6",
      "edge-dedup.commit-seq": "2",
      "edge-dedup.commit-seq.shard-1": String(SHARD_SEQ_BASE + 2),
      "edge-dedup.commit-seq.shard-2": String(2 * SHARD_SEQ_BASE + 2),
    });
    expect((await tableIds(s)).sort()).toEqual([0, 1, 2].flatMap((k) => ids(k).map((id) => `${id}-row`)).sort());
    const after = await json(call("GET", `/v1/streams/${s}/publication`));
    expect(after).toMatchObject({ committed: 6, table: 6 });
    // Each shard's manifest lies in its own folder, in its commit order.
    for (const stub of stubs) await runInDurableObject(stub, (c) => c.flush());
    for (const stub of stubs) await runDurableObjectAlarm(stub);
    const folders = new Set((await env.SINK.list({ prefix: `streams/${s}/_manifest/` })).objects.map((o) => o.key.split("/")[3]));
    expect(folders.size).toBe(3);
    expect(await json(call("GET", `/v1/streams/${s}/publication`))).toMatchObject({ committed: 6, manifest: 6 });
  });

  it("goes with the stream when it is deleted", async () => {
    await createStream("pdel", { ...base, table: { format: "iceberg" } });
    await post("pdel", { id: "a", ts: at(10, 0) });
    await runDurableObjectAlarm(env.COORDINATOR.getByName("pdel"));
    expect((await env.SINK.list({ prefix: "tables/pdel/" })).objects.length).toBeGreaterThan(0);
    expect((await call("DELETE", "/v1/streams/pdel")).status).toBe(204);
    expect((await env.SINK.list({ prefix: "tables/pdel/" })).objects).toEqual([]);
  });
});

/**
 * A table people can query at scale (issue #33), inside workerd with real R2:
 * read with an independent reader (icebird's Avro reader for the metadata and
 * manifests, hyparquet for the Parquet files, icebird for the table as a
 * whole), fetching the bucket's objects by the table's location. Every data
 * file holds one day, which its manifest entry records; GET …/table shows
 * the spec, the files per partition and the retention; snapshots replaced
 * more than `retain` ago are expired and the files only they used deleted,
 * while the current snapshot reads whole; an unpartitioned table upgraded to
 * `partitionBy: "day"` keeps its files and reads as one table.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { parquetReadObjects } from "hyparquet";
import { icebergManifests, icebergMetadata, icebergRead } from "icebird";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, client, createStream, json, post } from "../helpers";

const ORIGIN = "http://table.test";
const DAY = 86_400_000;
const D1 = Date.UTC(2024, 0, 1);

// The bucket as an object store answers it (with byte ranges): what an engine reading the table's location sees.
const realFetch = globalThis.fetch;
beforeAll(() => {
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== ORIGIN) return realFetch(input, init);
    const key = decodeURIComponent(url.pathname.slice(1));
    const range = /^bytes=(\d+)-(\d*)$/.exec(new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get("range") ?? "");
    const object = await env.SINK.get(
      key,
      range ? { range: { offset: Number(range[1]), ...(range[2] ? { length: Number(range[2]) - Number(range[1]) + 1 } : {}) } } : {},
    );
    if (!object) return new Response(null, { status: 404 });
    const bytes = await object.arrayBuffer();
    const head = (init?.method ?? (input instanceof Request ? input.method : "GET")) === "HEAD";
    return new Response(head ? null : bytes, { status: range ? 206 : 200, headers: { "content-length": String(head ? object.size : bytes.byteLength) } });
  }) as typeof fetch;
});
afterAll(() => {
  globalThis.fetch = realFetch;
});

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 day", partitions: 2, schema: { id: "string", ts: "timestamp", n: "long" } };
const tableUrl = (stream: string) => `${ORIGIN}/tables/${stream}`;

/**
 * Every live data file of the current snapshot, as icebird reads the
 * manifests, with hyparquet's rows; checks each file's metrics for the
 * event-time column against its rows on the way.
 */
async function filesAsRead(stream: string) {
  const metadata = await icebergMetadata({ tableUrl: tableUrl(stream) });
  const manifests = await icebergManifests(metadata);
  const tsId = metadata.schemas.find((x) => x["schema-id"] === metadata["current-schema-id"])!.fields.find((f) => f.name === "ts")!.id;
  const out: { partition: Record<string, unknown>; days: number[]; path: string }[] = [];
  for (const m of manifests) {
    for (const e of m.entries) {
      if (e.status === 2) continue;
      const path = e.data_file.file_path as string;
      const buffer = await (await fetch(path)).arrayBuffer();
      const rows = (await parquetReadObjects({ file: buffer, columns: ["ts"] })) as { ts: Date | bigint }[];
      const millis = rows.map((r) => Number(r.ts instanceof Date ? r.ts.getTime() : r.ts / 1000n));
      const days = [...new Set(millis.map((ms) => Math.floor(ms / DAY)))].sort();
      const bound = (bounds: { key: number; value: Uint8Array }[]) => {
        const b = bounds.find((x) => x.key === tsId)!.value;
        return Number(new DataView(b.buffer, b.byteOffset, b.byteLength).getBigInt64(0, true) / 1000n);
      };
      expect(Number(e.data_file.record_count)).toBe(rows.length);
      expect(Number((e.data_file.value_counts as unknown as { key: number; value: bigint }[]).find((x) => x.key === tsId)!.value)).toBe(rows.length);
      expect([bound(e.data_file.lower_bounds as never), bound(e.data_file.upper_bounds as never)]).toEqual([Math.min(...millis), Math.max(...millis)]);
      // icebird reads a `date` partition value as the Date of that day: days since 1970 again.
      const partition = Object.fromEntries(Object.entries(e.data_file.partition as object).map(([k, v]) => [k, v instanceof Date ? v.getTime() / DAY : v]));
      out.push({ partition, days, path });
    }
  }
  return out;
}

const ids = async (stream: string) => (await icebergRead({ tableUrl: tableUrl(stream) })).map((r) => r.id as string).sort();

describe("a table partitioned by event day", () => {
  it("holds one day per data file, shows its spec, files per partition and retention; expires replaced snapshots and deletes only their files", async () => {
    const s = "tday";
    await createStream(s, { ...base, table: { format: "iceberg", location: ORIGIN, retain: "1 second" } });
    const stub = env.COORDINATOR.getByName(s);
    const sent: string[] = [];
    const send = async (rows: { id: string; ts: number }[]) => {
      await post(s, rows);
      sent.push(...rows.map((r) => r.id));
      await runDurableObjectAlarm(stub);
    };
    await send([
      { id: "a", ts: D1 + 22 * 3_600_000 },
      { id: "b", ts: D1 + DAY + 3_600_000 },
    ]);
    const first = await json(call("GET", `/v1/streams/${s}/table`));
    expect(first.partitionBy).toBe("day");
    expect(first.partitionSpec).toMatchObject({ "spec-id": 0, fields: [{ name: "ts_day", transform: "day", "field-id": 1000 }] });
    expect(first.partitions).toEqual([
      { partition: "ts_day=2024-01-01", files: 1, records: 1, bytes: expect.any(Number) },
      { partition: "ts_day=2024-01-02", files: 1, records: 1, bytes: expect.any(Number) },
    ]);
    expect(first.files.map((f: { partition: string }) => f.partition).sort()).toEqual(["ts_day=2024-01-01", "ts_day=2024-01-02"]);
    expect(first.retention).toEqual({ retainMs: 1000, snapshots: 1, oldestSnapshotAt: first.snapshot["timestamp-ms"] });
    // Enough small files in one day for a compaction, each append its own snapshot.
    for (let i = 0; i < 8; i++) await send([{ id: `c${i}`, ts: D1 + DAY + (2 + i) * 3_600_000 }]);
    const compacted = await json(call("GET", `/v1/streams/${s}/table`));
    const rewritten = first.files.find((f: { partition: string }) => f.partition === "ts_day=2024-01-02").path as string;
    expect(compacted.files.map((f: { path: string }) => f.path)).not.toContain(rewritten); // compacted away, still in the bucket for older snapshots' readers
    expect(await env.SINK.head(`tables/${s}/${rewritten}`)).not.toBeNull();
    for (const f of await filesAsRead(s)) expect(f.days).toEqual([f.partition.ts_day]);
    const oldList = first.snapshot["manifest-list"].slice(`${ORIGIN}/tables/${s}/`.length) as string;

    // Past retain: the next commit expires every snapshot replaced before it, and (due at once) the sweep deletes what only they used.
    await new Promise((r) => setTimeout(r, 1_200));
    await send([{ id: "late-day", ts: D1 + DAY + 20 * 3_600_000 }]);
    const after = await json(call("GET", `/v1/streams/${s}/table`));
    expect(after.retention.snapshots).toBe(2); // the current one, and the one it just replaced (a reader may have loaded it)
    expect(await env.SINK.head(`tables/${s}/${rewritten}`)).toBeNull();
    expect(await env.SINK.head(`tables/${s}/${oldList}`)).toBeNull();
    expect((await call("GET", `/v1/streams/${s}/table/file?path=${encodeURIComponent(oldList)}`)).status).toBe(404);
    // The current snapshot reads whole, and every file it lists is there.
    expect(await ids(s)).toEqual(sent.sort());
    for (const f of after.files) expect(await env.SINK.head(`tables/${s}/${f.path}`), f.path).not.toBeNull();
    const meta = await icebergMetadata({ tableUrl: tableUrl(s) });
    expect(meta["snapshot-log"]!.map((e) => e["snapshot-id"])).toEqual(meta.snapshots!.map((x) => x["snapshot-id"]));
  });

  it("an unpartitioned table upgraded to day keeps its files, gains the spec for new ones and reads as one table", async () => {
    const s = "tup";
    const config = { ...base, table: { format: "iceberg", location: ORIGIN, partitionBy: "none" } };
    await createStream(s, config);
    const stub = env.COORDINATOR.getByName(s);
    await post(s, [
      { id: "old-1", ts: D1 + 3_600_000 },
      { id: "old-2", ts: D1 + DAY },
    ]);
    await runDurableObjectAlarm(stub);
    const before = await json(call("GET", `/v1/streams/${s}/table`));
    expect(before.partitionSpec).toEqual({ "spec-id": 0, fields: [] });
    expect(before.partitions).toEqual([{ partition: null, files: 1, records: 2, bytes: expect.any(Number) }]);
    // partitionBy left out: the default for a stream with an event time, "day".
    const put = await client.putStream(s, { ...base, table: { format: "iceberg", location: ORIGIN } } as never);
    expect(put.status).toBe(200);
    await post(s, [
      { id: "new-1", ts: D1 + DAY + 3_600_000 },
      { id: "new-2", ts: D1 + 2 * DAY },
    ]);
    await runDurableObjectAlarm(stub);
    const after = await json(call("GET", `/v1/streams/${s}/table`));
    expect(after).toMatchObject({ partitionBy: "day", specs: 2, partitionSpec: { "spec-id": 1, fields: [{ name: "ts_day", transform: "day" }] } });
    expect(after.partitions.map((p: { partition: string | null; files: number }) => [p.partition, p.files])).toEqual([
      [null, 1],
      ["ts_day=2024-01-02", 1],
      ["ts_day=2024-01-03", 1],
    ]);
    const oldFile = before.files[0].path;
    expect(after.files.map((f: { path: string }) => f.path)).toContain(oldFile);
    const files = await filesAsRead(s);
    expect(files.find((f) => f.path.endsWith(oldFile))!.partition).toEqual({});
    for (const f of files.filter((x) => !x.path.endsWith(oldFile))) expect(f.days).toEqual([f.partition.ts_day]);
    expect(await ids(s)).toEqual(["new-1", "new-2", "old-1", "old-2"]);
  });

  it("refuses partitioning without an event time, and a retain out of range", async () => {
    const bad = async (body: Record<string, unknown>) => {
      const r = await call("PUT", "/v1/streams/tbad", body);
      expect(r.status).toBe(400);
      return JSON.stringify(await r.json());
    };
    expect(await bad({ key: ["id"], mode: "global", table: { format: "iceberg", partitionBy: "hour" } })).toContain("table.partitionBy");
    expect(await bad({ ...base, table: { format: "iceberg", retain: "10 ms" } })).toContain("table.retain");
    expect(await bad({ ...base, table: { format: "iceberg", partitionBy: "week" } })).toContain("table.partitionBy");
  });
});

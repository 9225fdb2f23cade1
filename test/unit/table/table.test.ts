import { DuckDBInstance } from "@duckdb/node-api";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { appendToTable, type AppendInput } from "../../../src/table/append";
import { compactTable } from "../../../src/table/compact";
import { loadTable } from "../../../src/table/commit";
import { memoryStore } from "../../../src/table/memory-store";
import { readTableSnapshot } from "../../../src/table/read-snapshot";
import type { TableStore } from "../../../src/table/store";
import { decodeWithAvsc } from "../../support/avsc-reader";
import { serveBucket, writeObjects, type ServedBucket } from "../../support/iceberg-reader";

const T0 = Date.UTC(2026, 0, 1);
const SCHEMA = { id: "string", n: "long", at: "timestamp", secs: "timestamp:s", price: "double", ok: "boolean", qty: "int" } as const;

let served: ServedBucket;
let store: ReturnType<typeof memoryStore>;
beforeAll(async () => {
  store = memoryStore();
  served = await serveBucket(store);
});
afterAll(() => served.close());

const append = (s: TableStore, stream: string, commitSeq: number, rows: Record<string, unknown>[], schema: AppendInput["schema"] = SCHEMA) =>
  appendToTable(s, { stream, schema, rows, commitSeq, now: T0 + commitSeq, baseUri: served.baseUri });

describe("appendToTable, read back by icebird", () => {
  test("declared columns by type, undeclared as strings, in commit order", async () => {
    await append(store, "typed", 1, [
      { id: "a", n: 2 ** 40, at: "2026-01-01T10:00:00.123Z", secs: 1_700_000_000, price: 9.5, ok: true, qty: 3, meta: { tags: ["x"] } },
      { id: "b", n: "7", at: T0, secs: "1700000000.25", price: "1e3", ok: "false", qty: "-4", note: "plain" },
    ]);
    await append(store, "typed", 2, [{ id: "c" }]);
    const rows = await served.read("typed");
    expect(rows).toEqual([
      {
        id: "a",
        n: 2n ** 40n,
        at: new Date("2026-01-01T10:00:00.123Z"),
        secs: new Date(1_700_000_000_000),
        price: 9.5,
        ok: true,
        qty: 3,
        meta: '{"tags":["x"]}',
        note: null,
      },
      { id: "b", n: 7n, at: new Date(T0), secs: new Date(1_700_000_000_250), price: 1000, ok: false, qty: -4, meta: null, note: "plain" },
      // Declared columns are in every file; an undeclared one only in files where a row has it (icebird reads it as absent).
      { id: "c", n: null, at: null, secs: null, price: null, ok: null, qty: null, meta: undefined, note: undefined },
    ]);
  });

  test("a commit sequence already recorded is skipped and writes nothing", async () => {
    const first = await append(store, "once", 5, [{ id: "a" }]);
    const objects = store.objects.size;
    const again = await append(store, "once", 5, [{ id: "a" }]);
    const older = await append(store, "once", 3, [{ id: "z" }]);
    expect(first.skipped).toBe(false);
    expect(again).toEqual({ ...first, skipped: true });
    expect(older).toEqual({ ...first, skipped: true });
    expect(store.objects.size).toBe(objects);
    expect(await served.read("once")).toEqual([{ id: "a", n: null, at: null, secs: null, price: null, ok: null, qty: null }]);
  });

  test("no rows: nothing written, nothing recorded", async () => {
    expect(await append(store, "empty", 1, [])).toEqual({ snapshotId: null, sequenceNumber: 0, skipped: true, metadataLocation: null });
    expect(await store.list("tables/empty/")).toEqual([]);
  });

  test("readTableSnapshot: the current snapshot as Iceberg writes it", async () => {
    await append(store, "snap", 10, [{ id: "a" }, { id: "b" }]);
    const second = await append(store, "snap", 11, [{ id: "c" }]);
    const read = await readTableSnapshot(store, "snap");
    expect(read?.metadataLocation).toBe(`${served.baseUri}/tables/snap/metadata/v2.metadata.json`);
    expect(second.metadataLocation).toBe(read?.metadataLocation);
    expect(read?.snapshot).toMatchObject({
      "snapshot-id": second.snapshotId,
      "sequence-number": 2,
      "timestamp-ms": T0 + 11,
      summary: { operation: "append", "added-records": "1", "total-records": "3", "total-data-files": "2", "edge-dedup.commit-seq": "11" },
    });
    expect(await readTableSnapshot(store, "nothing-here")).toBeNull();
  });

  test("new columns evolve the schema with new field ids; an int column widens to long", async () => {
    await append(store, "evolve", 1, [{ id: "a", k: 1 }], { id: "string", k: "int" });
    await append(store, "evolve", 2, [{ id: "b", k: 2 ** 33, extra: 5 }], { id: "string", k: "long" });
    const { table } = (await loadTable(store, "evolve"))!;
    expect(table.schemas.map((s) => [s["schema-id"], s.fields.map((f) => `${f.id}:${f.name}:${f.type}`)])).toEqual([
      [0, ["1:id:string", "2:k:int"]],
      [1, ["1:id:string", "2:k:long", "3:extra:string"]],
    ]);
    expect(table["current-schema-id"]).toBe(1);
    expect(table["last-column-id"]).toBe(3);
    // icebird maps by the data file's `iceberg.schema`; the int file's values come back as numbers.
    expect((await served.read("evolve")).map((r) => [r.id, Number(r.k), r.extra])).toEqual([
      ["a", 1, undefined],
      ["b", 2 ** 33, "5"],
    ]);
  });

  test("a value that does not fit the table's type fails the append and commits nothing", async () => {
    await append(store, "strict", 1, [{ id: "a", k: 1 }], { id: "string", k: "long" });
    await expect(append(store, "strict", 2, [{ id: "b", k: "not a number" }], { id: "string" })).rejects.toThrow(
      /k: "not a number" does not fit the table's long column/,
    );
    expect((await readTableSnapshot(store, "strict"))?.snapshot.summary["edge-dedup.commit-seq"]).toBe("1");
  });

  test("a commit that loses the race to another writer re-reads, then retries or skips", async () => {
    const s = memoryStore();
    let competitor: (() => Promise<unknown>) | null = null;
    // The next metadata commit finds its version already created by the competitor.
    const racy: TableStore = {
      ...s,
      async put(key, body, options) {
        if (competitor && key.endsWith(".metadata.json")) {
          const run = competitor;
          competitor = null;
          await run();
        }
        return s.put(key, body, options);
      },
    };
    await append(s, "race", 1, [{ id: "a" }]);
    competitor = () => append(s, "race", 2, [{ id: "same commit" }]);
    expect((await append(racy, "race", 2, [{ id: "same commit" }])).skipped).toBe(true);
    competitor = () => append(s, "race", 3, [{ id: "other commit" }]);
    expect(await append(racy, "race", 4, [{ id: "b" }])).toMatchObject({ skipped: false, sequenceNumber: 4 });
    const { table, version } = (await loadTable(s, "race"))!;
    expect([version, table.snapshots.map((x) => x.summary["edge-dedup.commit-seq"])]).toEqual([4, ["1", "2", "3", "4"]]);
  });

  test("a crash between the data write and the commit leaves only a file the retry reuses", async () => {
    const s = memoryStore();
    const crashing: TableStore = {
      ...s,
      async put(key, body, options) {
        if (key.includes("/metadata/")) throw new Error("crash");
        return s.put(key, body, options);
      },
    };
    await expect(append(crashing, "crash", 1, [{ id: "a" }])).rejects.toThrow("crash");
    const orphan = await s.list("tables/crash/");
    expect(orphan).toEqual([expect.stringMatching(/^tables\/crash\/data\/c0{19}1-[0-9a-f]{16}\.parquet$/)]);
    await append(s, "crash", 1, [{ id: "a" }]);
    expect((await s.list("tables/crash/data/")).length).toBe(1);
    expect(await s.list("tables/crash/metadata/")).toEqual(
      expect.arrayContaining(["tables/crash/metadata/v1.metadata.json", "tables/crash/metadata/version-hint.text"]),
    );
  });

  test("a lagging version hint is probed past", async () => {
    const s = memoryStore();
    await append(s, "hint", 1, [{ id: "a" }]);
    await append(s, "hint", 2, [{ id: "b" }]);
    await s.put("tables/hint/metadata/version-hint.text", "1");
    expect((await loadTable(s, "hint"))?.version).toBe(2);
    expect((await append(s, "hint", 2, [{ id: "b" }])).skipped).toBe(true);
  });

  test("manifests carry the Avro metadata and field ids Iceberg requires (decoded by avsc)", async () => {
    const s = memoryStore();
    await append(s, "avro", 1, [{ id: "a" }]);
    const keys = await s.list("tables/avro/metadata/");
    const manifest = await decodeWithAvsc((await s.get(keys.find((k) => k.endsWith("-m0.avro"))!))!);
    expect(manifest.metadata).toMatchObject({ "partition-spec": "[]", "partition-spec-id": "0", "format-version": "2", content: "data" });
    expect(JSON.parse(manifest.metadata.schema).fields[0]).toMatchObject({ id: 1, name: "id", type: "string" });
    expect(manifest.schema).toContain('"field-id":134');
    expect(manifest.records[0]).toMatchObject({ status: 1, sequence_number: null, data_file: { content: 0, file_format: "PARQUET", record_count: 1 } });
    const list = await decodeWithAvsc((await s.get(keys.find((k) => k.includes("/snap-"))!))!);
    expect(list.metadata).toMatchObject({ "format-version": "2", "sequence-number": "1" });
    expect(list.schema).toContain('"field-id":517');
    expect(list.records[0]).toMatchObject({ content: 0, sequence_number: 1, added_files_count: 1, added_rows_count: 1, partitions: [] });
  });
});

describe("DuckDB", () => {
  // DuckDB's iceberg extension needs the network to install (`INSTALL iceberg` fails offline), so DuckDB
  // reads the Parquet files the current snapshot lists (found through avsc-decoded manifests) by itself.
  test("reads the current snapshot's data files: field ids, types, rows", async () => {
    const s = memoryStore();
    const dir = await mkdtemp(join(tmpdir(), "iceberg-"));
    const baseUri = `file://${dir}`;
    await appendToTable(s, {
      stream: "d",
      schema: SCHEMA,
      rows: [{ id: "a", n: 1, at: "2026-01-01T10:00:00Z", price: 2.5, ok: true, qty: 7, meta: [1] }],
      commitSeq: 1,
      now: T0,
      baseUri,
    });
    await appendToTable(s, { stream: "d", schema: SCHEMA, rows: [{ id: "b", n: 2 }], commitSeq: 2, now: T0, baseUri });
    await compactTable(s, "d", { minFiles: 2, targetBytes: 1 << 20, now: T0 });
    await appendToTable(s, { stream: "d", schema: SCHEMA, rows: [{ id: "c", secs: 1_700_000_000 }], commitSeq: 3, now: T0, baseUri });
    await writeObjects(s.objects, dir);
    const snapshot = (await readTableSnapshot(s, "d"))!.snapshot;
    const fromUri = (uri: string) => s.get(uri.slice(baseUri.length + 1));
    const list = await decodeWithAvsc((await fromUri(snapshot["manifest-list"]))!);
    const files: string[] = [];
    for (const m of list.records) {
      for (const e of (await decodeWithAvsc((await fromUri(m.manifest_path as string))!)).records) {
        if (e.status !== 2) files.push(((e.data_file as Record<string, unknown>).file_path as string).slice("file://".length));
      }
    }
    expect(files).toHaveLength(2);
    const db = await (await DuckDBInstance.create(":memory:")).connect();
    const query = async (sql: string) => (await db.runAndReadAll(sql)).getRowObjectsJson();
    const paths = `[${files.map((f) => `'${f}'`).join(",")}]`;
    expect(await query(`SELECT name, field_id FROM parquet_schema('${files[0]}') WHERE field_id IS NOT NULL`)).toEqual(
      ["id", "n", "at", "secs", "price", "ok", "qty", "meta"].map((name, i) => ({ name, field_id: String(i + 1) })),
    );
    expect(
      await query(
        `SELECT id, n, epoch_ms("at") AS at, typeof("at") AS at_type, epoch("secs") AS secs, price, ok, qty, meta FROM read_parquet(${paths}, union_by_name=true) ORDER BY id`,
      ),
    ).toEqual([
      { id: "a", n: "1", at: String(Date.UTC(2026, 0, 1, 10)), at_type: "TIMESTAMP WITH TIME ZONE", secs: null, price: 2.5, ok: true, qty: 7, meta: "[1]" },
      { id: "b", n: "2", at: null, at_type: "TIMESTAMP WITH TIME ZONE", secs: null, price: null, ok: null, qty: null, meta: null },
      { id: "c", n: null, at: null, at_type: "TIMESTAMP WITH TIME ZONE", secs: 1_700_000_000, price: null, ok: null, qty: null, meta: null },
    ]);
    db.closeSync();
    await rm(dir, { recursive: true });
  });
});

describe("compactTable", () => {
  test("rewrites the small files into one replace snapshot: same rows, one live file, commit sequence kept", async () => {
    const s = memoryStore();
    const reader = await serveBucket(s);
    try {
      const put = (seq: number, rows: Record<string, unknown>[], schema: AppendInput["schema"] = { id: "string", k: "int" }) =>
        appendToTable(s, { stream: "c", schema, rows, commitSeq: seq, now: T0 + seq, baseUri: reader.baseUri });
      await put(1, [
        { id: "a", k: 1 },
        { id: "b", k: 2 },
      ]);
      await put(2, [{ id: "c", k: 3, extra: true }]);
      await put(3, [{ id: "d", k: 2 ** 40, at: "2026-01-01T00:00:00Z" }], { id: "string", k: "long", at: "timestamp" });
      const before = await reader.read("c");
      const result = await compactTable(s, "c", { minFiles: 2, targetBytes: 1 << 20, now: T0 + 100 });
      expect(result).toMatchObject({ compacted: true, filesRewritten: 3, sequenceNumber: 4 });
      const after = await reader.read("c");
      // Before, icebird reads the older files by their own schema (k as int, later columns absent); after, all by the current one.
      const asCurrent = (v: unknown) => (v === undefined ? null : typeof v === "number" ? BigInt(v) : v);
      expect(after).toEqual(before.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, asCurrent(v)]))));
      expect(after.map((r) => [r.id, r.k, r.extra, r.at])).toEqual([
        ["a", 1n, null, null],
        ["b", 2n, null, null],
        ["c", 3n, "true", null],
        ["d", 2n ** 40n, null, new Date(T0)],
      ]);
      const snap = (await readTableSnapshot(s, "c"))!.snapshot;
      expect(snap.summary).toMatchObject({
        operation: "replace",
        "added-data-files": "1",
        "deleted-data-files": "3",
        "added-records": "4",
        "deleted-records": "4",
        "total-records": "4",
        "total-data-files": "1",
        "edge-dedup.commit-seq": "3",
      });
      // Time travel still reads the version before compaction.
      expect(await reader.read("c", "v3.metadata.json")).toEqual(before);
      expect(await s.list("tables/c/data/")).toHaveLength(4);
      // Exactly once across compaction; the next append drops the deletions-only manifest.
      expect((await put(3, [{ id: "d" }])).skipped).toBe(true);
      await put(4, [{ id: "e" }]);
      expect((await reader.read("c")).map((r) => r.id)).toEqual(["a", "b", "c", "d", "e"]);
      expect((await readTableSnapshot(s, "c"))!.snapshot.summary).toMatchObject({ "total-records": "5", "total-data-files": "2" });
    } finally {
      await reader.close();
    }
  });

  test("leaves the table alone when fewer than minFiles files are small", async () => {
    const s = memoryStore();
    await appendToTable(s, { stream: "few", schema: {}, rows: [{ id: "a" }], commitSeq: 1, now: T0 });
    await appendToTable(s, { stream: "few", schema: {}, rows: [{ id: "b" }], commitSeq: 2, now: T0 });
    expect(await compactTable(s, "few", { minFiles: 3, targetBytes: 1 << 20, now: T0 })).toMatchObject({ compacted: false, filesRewritten: 0 });
    expect(await compactTable(s, "few", { minFiles: 2, targetBytes: 10, now: T0 })).toMatchObject({ compacted: false });
    expect(await compactTable(s, "none", { minFiles: 2, targetBytes: 10, now: T0 })).toMatchObject({ compacted: false, snapshotId: null });
    expect((await loadTable(s, "few"))?.version).toBe(2);
  });
});

/**
 * A partitioned table (src/table/partitioning.ts, issue #33), read back with
 * independent readers: avsc for the manifests and manifest lists, DuckDB for
 * the Parquet files, icebird for the table as a whole. Every data file holds
 * one partition value, which equals the day (or hour) of every row in it;
 * the manifest list's summaries bound its manifest's values; an old
 * unpartitioned table gains the spec for its new files and still reads as
 * one table; compaction rewrites a partition at a time.
 */
import fc from "fast-check";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { appendToTable, type AppendInput } from "../../../src/table/append";
import { compactTable } from "../../../src/table/compact";
import { loadTable } from "../../../src/table/commit";
import { memoryStore } from "../../../src/table/memory-store";
import { partitionLabel, transformValue } from "../../../src/table/partitioning";
import { readTableSnapshot, tableFiles, tableLayout } from "../../../src/table/read-snapshot";
import type { TableStore } from "../../../src/table/store";
import { decodeWithAvsc } from "../../support/avsc-reader";
import { serveBucket, writeObjects } from "../../support/iceberg-reader";

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 11, 5, 21, 0);

describe("the day and hour transforms", () => {
  test("floor the instant to whole days and hours since 1970, before 1970 too", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e13, max: 1e13 }), fc.integer({ min: 0, max: 999 }), (ms, us) => {
        const micros = BigInt(ms) * 1000n + BigInt(us);
        expect(transformValue("day", micros)).toBe(Math.floor(ms / DAY));
        expect(transformValue("hour", micros)).toBe(Math.floor(ms / HOUR));
      }),
    );
    expect(transformValue("day", -1n)).toBe(-1);
    expect(transformValue("day", null)).toBeNull();
  });

  test("Iceberg's partition names", () => {
    const spec = (transform: "day" | "hour") => ({ "spec-id": 1, fields: [{ "source-id": 2, "field-id": 1000, name: `ts_${transform}`, transform }] });
    expect(partitionLabel(spec("day"), [transformValue("day", BigInt(T0) * 1000n)])).toBe("ts_day=2026-12-05");
    expect(partitionLabel(spec("hour"), [transformValue("hour", BigInt(T0) * 1000n)])).toBe("ts_hour=2026-12-05-21");
    expect(partitionLabel(spec("day"), [null])).toBe("ts_day=null");
  });
});

let dir: string;
let db: DuckDBConnection;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "partitions-"));
  db = await (await DuckDBInstance.create(":memory:")).connect();
});
afterAll(() => rm(dir, { recursive: true, force: true }));
const query = async (sql: string) => (await db.runAndReadAll(sql)).getRowObjectsJson() as Record<string, any>[];

/** Every live file of the current snapshot as the independent readers see it: its manifest's spec id, its partition record, and DuckDB's figures of its rows. */
async function filesAsRead(s: TableStore & { objects: Map<string, Uint8Array> }, stream: string, baseUri: string, column: string) {
  await rm(join(dir, "tables", stream), { recursive: true, force: true });
  await writeObjects(new Map([...s.objects].filter(([k]) => k.startsWith(`tables/${stream}/`))), dir);
  const { snapshot } = (await readTableSnapshot(s, stream))!;
  const at = (uri: string) => s.get(uri.slice(baseUri.length + 1));
  const list = await decodeWithAvsc((await at(snapshot["manifest-list"]))!);
  const out: { specId: number; partition: Record<string, number | null>; path: string; days: number[]; hours: number[]; rows: number }[] = [];
  for (const m of list.records) {
    const manifest = await decodeWithAvsc((await at(m.manifest_path as string))!);
    expect(manifest.metadata["partition-spec-id"]).toBe(String(m.partition_spec_id));
    const entries = manifest.records.filter((e) => e.status !== 2);
    const seen: number[] = [];
    for (const e of entries) {
      const file = e.data_file as Record<string, any>;
      const path = join(dir, (file.file_path as string).slice(baseUri.length));
      const figures = await query(
        `SELECT list(DISTINCT epoch_us("${column}") // ${DAY * 1000}) AS days, list(DISTINCT epoch_us("${column}") // ${HOUR * 1000}) AS hours, count(*) AS n FROM read_parquet('${path}')`,
      );
      const partition = { ...(file.partition as Record<string, number | null>) };
      seen.push(...(Object.values(partition).filter((v) => v !== null) as number[]));
      out.push({
        specId: m.partition_spec_id as number,
        partition,
        path: file.file_path,
        days: (figures[0].days as string[]).map(Number).sort((a, b) => a - b),
        hours: (figures[0].hours as string[]).map(Number).sort((a, b) => a - b),
        rows: Number(figures[0].n),
      });
    }
    // The manifest list's summary of each partition field: 4-byte little-endian bounds of the values its manifest lists.
    const summaries = (m.partitions as { contains_null: boolean; lower_bound: Buffer | null; upper_bound: Buffer | null }[] | null) ?? [];
    const partitioned = JSON.parse(manifest.metadata["partition-spec"]).length > 0;
    expect(summaries).toHaveLength(partitioned ? 1 : 0);
    if (partitioned) expect(summaries[0].contains_null).toBe(false);
    if (seen.length > 0) {
      expect(summaries[0].lower_bound!.readInt32LE(0)).toBe(Math.min(...seen));
      expect(summaries[0].upper_bound!.readInt32LE(0)).toBe(Math.max(...seen));
    } else if (partitioned) expect([summaries[0].lower_bound, summaries[0].upper_bound]).toEqual([null, null]); // only deleted entries
  }
  return out;
}

const rowsOver = (n: number, from: number, step: number, tag: string) => Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}`, ts: from + i * step }));

describe("a table partitioned by event day", () => {
  test("one partition value per data file, equal to the day of every row in it; the manifest list bounds them; icebird reads every row", async () => {
    const s = memoryStore();
    const served = await serveBucket(s);
    try {
      const base = { stream: "pd", schema: { id: "string", ts: "timestamp" }, baseUri: served.baseUri, partitionBy: "day", eventTime: "ts" } as const;
      const sent: { id: string; ts: number }[] = [];
      for (let seq = 1; seq <= 3; seq++) {
        const rows = rowsOver(30, T0 + (seq - 1) * DAY, 7 * 60_000, `c${seq}`); // 3.5 hours from 21:00: each commit spans two days
        sent.push(...rows);
        const r = await appendToTable(s, { ...base, rows, commitSeq: seq, now: T0 + seq });
        expect(r.skipped).toBe(false);
      }
      const { table } = (await loadTable(s, "pd"))!;
      const tsId = table.schemas.at(-1)!.fields.find((f) => f.name === "ts")!.id;
      expect(table["partition-specs"]).toEqual([{ "spec-id": 0, fields: [{ "source-id": tsId, "field-id": 1000, name: "ts_day", transform: "day" }] }]);
      expect(table["last-partition-id"]).toBe(1000);
      const files = await filesAsRead(s, "pd", served.baseUri, "ts");
      expect(files).toHaveLength(6);
      for (const f of files) {
        expect(f.days).toEqual([f.partition.ts_day]);
        expect(f.specId).toBe(0);
      }
      expect(new Set(files.map((f) => f.partition.ts_day)).size).toBe(4);
      expect(files.reduce((n, f) => n + f.rows, 0)).toBe(sent.length);
      const current = (await readTableSnapshot(s, "pd"))!;
      expect(current.snapshot.summary["changed-partition-count"]).toBe("2");
      const layout = tableLayout(current, await tableFiles(s, "pd", current));
      expect(layout.partitions!.map((p) => [p.partition, p.files])).toEqual([
        ["ts_day=2026-12-05", 1],
        ["ts_day=2026-12-06", 2],
        ["ts_day=2026-12-07", 2],
        ["ts_day=2026-12-08", 1],
      ]);
      expect((await served.read("pd")).map((r) => r.id).sort()).toEqual(sent.map((r) => r.id).sort());
    } finally {
      await served.close();
    }
  });

  test("by hour, and an event-time column the stream did not declare is a timestamp in the table", async () => {
    const s = memoryStore();
    const baseUri = "http://127.0.0.1:1";
    const rows = rowsOver(40, T0, 11 * 60_000, "h");
    await appendToTable(s, { stream: "ph", schema: { id: "string" }, rows, commitSeq: 1, now: T0, baseUri, partitionBy: "hour", eventTime: "ts" });
    const { table } = (await loadTable(s, "ph"))!;
    expect(table.schemas.at(-1)!.fields.find((f) => f.name === "ts")!.type).toBe("timestamptz");
    const files = await filesAsRead(s, "ph", baseUri, "ts");
    expect(files).toHaveLength(8); // 40 rows 11 minutes apart from 21:00: 7 h 20 min
    for (const f of files) expect(f.hours).toEqual([f.partition.ts_hour]);
  });
});

describe("spec evolution: an old unpartitioned table", () => {
  test("gains the day spec for new files; old files keep theirs; it reads as one table; compaction rewrites a partition at a time and never old files", async () => {
    const s = memoryStore();
    const served = await serveBucket(s);
    try {
      const baseUri = served.baseUri;
      const old: Omit<AppendInput, "rows" | "commitSeq" | "now"> = { stream: "up", schema: { id: "string", ts: "timestamp" }, baseUri };
      const sent: { id: string; ts: number }[] = [];
      const append = async (seq: number, partitionBy: AppendInput["partitionBy"]) => {
        const rows = rowsOver(10, T0 + (seq % 3) * DAY, 30 * 60_000, `u${seq}`);
        sent.push(...rows);
        await appendToTable(s, { ...old, rows, commitSeq: seq, now: T0 + seq, ...(partitionBy ? { partitionBy, eventTime: "ts" } : {}) });
      };
      // Written as every table was before partitioning: no partitionBy.
      for (let seq = 1; seq <= 3; seq++) await append(seq, undefined);
      const before = await filesAsRead(s, "up", baseUri, "ts");
      expect(before.every((f) => f.specId === 0 && Object.keys(f.partition).length === 0)).toBe(true);
      for (let seq = 4; seq <= 9; seq++) await append(seq, "day");
      const { table } = (await loadTable(s, "up"))!;
      expect(table["partition-specs"].map((p) => [p["spec-id"], p.fields.map((f) => f.transform)])).toEqual([
        [0, []],
        [1, ["day"]],
      ]);
      expect(table["default-spec-id"]).toBe(1);
      const after = await filesAsRead(s, "up", baseUri, "ts");
      expect(after.filter((f) => f.specId === 0).map((f) => f.path)).toEqual(before.map((f) => f.path));
      for (const f of after.filter((x) => x.specId === 1)) expect(f.days).toEqual([f.partition.ts_day]);
      expect((await served.read("up")).map((r) => r.id).sort()).toEqual(sent.map((r) => r.id).sort());

      const compacted = await compactTable(s, "up", { minFiles: 3, targetBytes: 1 << 20, now: T0 + 20 });
      expect(compacted.compacted).toBe(true);
      const rewritten = await filesAsRead(s, "up", baseUri, "ts");
      expect(rewritten.filter((f) => f.specId === 0).map((f) => f.path)).toEqual(before.map((f) => f.path));
      const spec1 = rewritten.filter((f) => f.specId === 1);
      for (const f of spec1) expect(f.days).toEqual([f.partition.ts_day]);
      // Each partition that had at least 3 small files is now one file.
      const byDay = new Map<number, number>();
      for (const f of after.filter((x) => x.specId === 1)) byDay.set(f.partition.ts_day!, (byDay.get(f.partition.ts_day!) ?? 0) + 1);
      for (const [day, n] of byDay) expect(spec1.filter((f) => f.partition.ts_day === day)).toHaveLength(n >= 3 ? 1 : n);
      expect((await served.read("up")).map((r) => r.id).sort()).toEqual(sent.map((r) => r.id).sort());

      // Asking for none again makes spec 0 the default again (no third spec).
      await append(10, "none");
      const back = (await loadTable(s, "up"))!.table;
      expect([back["partition-specs"].length, back["default-spec-id"]]).toEqual([2, 0]);
      expect((await served.read("up")).length).toBe(sent.length);
    } finally {
      await served.close();
    }
  });

  test("whose event-time column is a string column stays unpartitioned, and says why", async () => {
    const s = memoryStore();
    const baseUri = "http://127.0.0.1:1";
    const stream = "str";
    await appendToTable(s, { stream, schema: { id: "string" }, rows: [{ id: "a", ts: "2026-12-05T10:00:00Z" }], commitSeq: 1, now: T0, baseUri });
    await appendToTable(s, {
      stream,
      schema: { id: "string" },
      rows: [{ id: "b", ts: "2026-12-06T10:00:00Z" }],
      commitSeq: 2,
      now: T0,
      baseUri,
      partitionBy: "day",
      eventTime: "ts",
    });
    const { table } = (await loadTable(s, stream))!;
    expect(table["partition-specs"]).toEqual([{ "spec-id": 0, fields: [] }]);
    const { partitionProblem } = await import("../../../src/table/partitioning");
    expect(partitionProblem(table.schemas.at(-1)!, "day", "ts")).toMatch(/string column, not a timestamptz/);
  });
});

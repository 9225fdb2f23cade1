import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { appendToTable } from "../../../src/table/append";
import { compactTable } from "../../../src/table/compact";
import { loadTable } from "../../../src/table/commit";
import { memoryStore } from "../../../src/table/memory-store";
import { currentSchema, currentSnapshot, DROPPED_FIELDS_KEY, SCHEMA_HISTORY_MAX } from "../../../src/table/metadata";
import { liveDataFiles, manifestsOf } from "../../../src/table/snapshot-files";
import { serveBucket, type ServedBucket } from "../../support/iceberg-reader";

/**
 * The table stays bounded however wide the rows get (issue 14): metadata
 * keeps only the schemas its retained snapshots use, a data file carries only
 * the columns its rows need, and the writer never takes more than maxColumns
 * columns nor a name that cannot be one, without failing the append.
 */
const T0 = Date.UTC(2026, 0, 1);
const SCHEMA = { id: "string" } as const;

let store: ReturnType<typeof memoryStore>;
let served: ServedBucket;
beforeAll(async () => {
  store = memoryStore();
  served = await serveBucket(store);
});
afterAll(() => served.close());

const wideRow = (id: string, from: number, count: number) =>
  Object.fromEntries([["id", id], ...Array.from({ length: count }, (_, i) => [`field_${from + i}`, "v"])]);
const append = (stream: string, seq: number, rows: Record<string, unknown>[], maxColumns?: number) =>
  appendToTable(store, { stream, schema: SCHEMA, rows, commitSeq: seq, now: T0 + seq, baseUri: served.baseUri, ...(maxColumns ? { maxColumns } : {}) });
const bytesOf = async (stream: string, path: string) => (await store.get(`tables/${stream}/${path}`))!.length;
const metadataBytes = async (stream: string) => {
  const { version } = (await loadTable(store, stream))!;
  return bytesOf(stream, `metadata/v${version}.metadata.json`);
};

describe("metadata.json", () => {
  test("stays linear in the columns after many schema-widening appends (it grew with their square)", async () => {
    const appends = 150;
    for (let seq = 1; seq <= appends; seq++) await append("widen", seq, [wideRow(`r${seq}`, seq * 10, 10)], 5_000);
    const { table } = (await loadTable(store, "widen"))!;
    const schemaBytes = JSON.stringify(currentSchema(table), null, 2).length;
    expect(currentSchema(table)!.fields).toHaveLength(1 + appends * 10);
    // Every version used to keep every schema: 150 of them, 750 columns on average (~75 current schemas' worth).
    expect(await metadataBytes("widen")).toBeLessThan(1.3 * SCHEMA_HISTORY_MAX * schemaBytes + 64 * 1024);
    // Only the schemas the retained snapshots (and the table) use, per the spec.
    const used = new Set([table["current-schema-id"], ...table.snapshots.map((s) => s["schema-id"])]);
    expect(new Set(table.schemas.map((s) => s["schema-id"]))).toEqual(used);
    expect(used.size).toBeLessThanOrEqual(SCHEMA_HISTORY_MAX);
    expect(table.snapshots.length).toBeGreaterThan(0);
    expect(table["snapshot-log"].map((e) => e["snapshot-id"])).toEqual(table.snapshots.map((s) => s["snapshot-id"]));
    // An external reader still reads every row.
    const rows = await served.read("widen");
    expect(rows.map((r) => r.id)).toEqual(Array.from({ length: appends }, (_, i) => `r${i + 1}`));
    expect(rows[appends - 1][`field_${appends * 10}`]).toBe("v");
  }, 120_000);

  test("appends that add no column keep one schema and the full snapshot history", async () => {
    for (let seq = 1; seq <= 30; seq++) await append("narrow", seq, [{ id: `r${seq}`, tag: "x" }]);
    const { table } = (await loadTable(store, "narrow"))!;
    expect(table.schemas).toHaveLength(1);
    expect(table.snapshots).toHaveLength(30);
  });
});

describe("data files", () => {
  test("a 15-byte row after wide appends writes small files", async () => {
    for (let seq = 1; seq <= 4; seq++) await append("sparse", seq, [wideRow(`w${seq}`, seq * 250, 250)]);
    const result = await append("sparse", 5, [{ id: "x", tag: "small" }]);
    const { table } = (await loadTable(store, "sparse"))!;
    expect(currentSchema(table)!.fields.length).toBe(1 + 4 * 250 + 1);
    const files = await liveDataFiles(store, "sparse", table.location, currentSnapshot(table)!);
    const last = files.find((f) => f.sequenceNumber === result.sequenceNumber)!;
    // It carried a column chunk for each of the table's 1,002 columns (hundreds of KB; 8 MB at 16,000).
    expect(last.sizeInBytes).toBeLessThan(2_048);
    const schemaBytes = JSON.stringify(currentSchema(table)).length;
    expect(await metadataBytes("sparse")).toBeLessThan(6 * JSON.stringify(currentSchema(table), null, 2).length);
    // Its manifest carries the table schema once, as the spec asks, and its one entry: bounded by the column cap.
    const manifest = (await manifestsOf(store, "sparse", table.location, currentSnapshot(table)!)).find((m) => m.sequenceNumber === result.sequenceNumber)!;
    expect(manifest.length).toBeLessThan(schemaBytes + 4_096);
    const rows = await served.read("sparse");
    expect(rows.map((r) => [r.id, r.tag ?? null, r.field_1000 ?? null])).toEqual([
      ["w1", null, null],
      ["w2", null, null],
      ["w3", null, null],
      ["w4", null, "v"],
      ["x", "small", null],
    ]);
  });

  test("compaction writes the columns its files carry, not every column of the table", async () => {
    const s = memoryStore();
    const put = (seq: number, rows: Record<string, unknown>[]) => appendToTable(s, { stream: "c", schema: SCHEMA, rows, commitSeq: seq, now: T0 + seq });
    await put(1, [wideRow("wide", 0, 500)]);
    for (let seq = 2; seq <= 4; seq++) await put(seq, [{ id: `n${seq}`, tag: "t" }]);
    const before = await liveDataFiles(s, "c", (await loadTable(s, "c"))!.table.location, currentSnapshot((await loadTable(s, "c"))!.table)!);
    const small = before.filter((f) => f.sequenceNumber > 1);
    expect(await compactTable(s, "c", { minFiles: 2, targetBytes: Math.max(...small.map((f) => f.sizeInBytes)) + 1, now: T0 + 9 })).toMatchObject({
      compacted: true,
      filesRewritten: 3,
    });
    const { table } = (await loadTable(s, "c"))!;
    const after = await liveDataFiles(s, "c", table.location, currentSnapshot(table)!);
    const rewritten = after.find((f) => f.path.includes("/data/r"))!;
    expect(rewritten.recordCount).toBe(3);
    expect(rewritten.sizeInBytes).toBeLessThan(2_048);
  });
});

describe("the writer's own column cap and name rules", () => {
  test("fields past maxColumns, or whose names cannot be columns, are left out and counted; the append succeeds", async () => {
    const rows = [
      { id: "a", one: 1, two: 2 },
      JSON.parse('{"id": "b", "": "empty", "nul\\u0000": 1, "__proto__": {"x": 1}, "ONE": "upper", "three": 3, "four": 4}'),
    ];
    const result = await append("capped", 1, rows, 4);
    expect(result.skipped).toBe(false);
    expect(new Set(result.droppedFields)).toEqual(new Set(["", "nul\u0000", "__proto__", "ONE", "four"]));
    const { table } = (await loadTable(store, "capped"))!;
    expect(currentSchema(table)!.fields.map((f) => f.name)).toEqual(["id", "one", "two", "three"]);
    expect(currentSnapshot(table)!.summary[DROPPED_FIELDS_KEY]).toBe("5");
    expect(await served.read("capped")).toEqual([
      { id: "a", one: "1", two: "2", three: null },
      { id: "b", one: null, two: null, three: "3" },
    ]);
    // The next append within the cap records nothing dropped.
    const next = await append("capped", 2, [{ id: "c", three: 3 }], 4);
    expect(next.droppedFields).toBeUndefined();
    expect(currentSnapshot((await loadTable(store, "capped"))!.table)!.summary[DROPPED_FIELDS_KEY]).toBeUndefined();
  });
});

import { describe, expect, test } from "vitest";
import { planBatch } from "../../../src/stream/batch";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { ColumnBudget, DEFAULT_MAX_COLUMNS, fieldNameProblem, maxColumnsOf } from "../../../src/stream/table-fields";
import { validConfig } from "../stream-config";

/**
 * Issue 14 at ingest: a stream with a table rejects, by index and with a
 * reason, the rows whose field names cannot be table columns or that would
 * take the table past its column cap; they never reach the output.
 */
const at = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const NOW = at(12, 0);
const config = (table: Record<string, unknown> | null, schema: Record<string, string> = { id: "string", ts: "timestamp" }): StreamConfig =>
  validConfig({
    key: ["id"],
    eventTime: "ts",
    watermarkDelay: "5 minutes",
    partitions: 2,
    schema,
    ...(table ? { table: { format: "iceberg", ...table } } : {}),
  });
const plan = (c: StreamConfig, rows: unknown[], tableColumns?: string[]) =>
  planBatch(c, rows, NOW, { source: "default", watermark: 0, ...(tableColumns ? { tableColumns } : {}) });
const accepted = (p: ReturnType<typeof planBatch>) =>
  [...p.subBatches.values()]
    .flat()
    .map((r) => r.index)
    .sort((a, b) => a - b);

describe("field names", () => {
  const rows = [
    JSON.parse('{"id": "ok", "ts": 1704103200000, "note": "fine"}'),
    JSON.parse('{"id": "empty", "ts": 1704103200000, "": 1}'),
    JSON.parse('{"id": "nul", "ts": 1704103200000, "a\\u0000b": 1}'),
    JSON.parse('{"id": "case", "ts": 1704103200000, "A": 1, "a": 2}'),
    JSON.parse('{"id": "proto", "ts": 1704103200000, "__proto__": {"polluted": true}}'),
    JSON.parse('{"id": "clash", "ts": 1704103200000, "NOTE": "upper"}'),
    JSON.parse(`{"id": "long", "ts": 1704103200000, "${"x".repeat(257)}": 1}`),
    JSON.parse('{"id": "tab", "ts": 1704103200000, "a\\tb": 1}'),
  ];

  test("a stream with a table rejects each bad name by index, with the reason", () => {
    const p = plan(config({}), rows);
    expect(accepted(p)).toEqual([0]);
    expect(p.rejected).toEqual([
      { index: 1, error: "an empty field name cannot be a table column" },
      { index: 2, error: 'field "a\\u0000b" has a control character' },
      { index: 3, error: 'fields "A" and "a" differ only in case: a table column cannot tell them apart' },
      { index: 4, error: 'field "__proto__" cannot be a table column' },
      // "note" became a column with row 0, so "NOTE" is the same column to most readers.
      { index: 5, error: 'field "NOTE" differs only in case from the table\'s column "note"' },
      { index: 6, error: `field "${"x".repeat(32)}…" is longer than 256 characters` },
      { index: 7, error: 'field "a\\tb" has a control character' },
    ]);
    expect(p.newColumns).toEqual(["note"]);
  });

  test("against the columns the table already has, and the declared ones", () => {
    const p = plan(
      config({}, { id: "string", ts: "timestamp", Amount: "double" }),
      [
        { id: "x", ts: at(10, 0), amount: 1 },
        { id: "y", ts: at(10, 0), Tag: "t" },
        { id: "z", ts: at(10, 0), Amount: 2, tag: "t" },
      ],
      ["tag"],
    );
    expect(p.rejected).toEqual([
      { index: 0, error: 'field "amount" differs only in case from the table\'s column "Amount"' },
      { index: 1, error: 'field "Tag" differs only in case from the table\'s column "tag"' },
    ]);
    expect(accepted(p)).toEqual([2]);
    expect(p.newColumns).toEqual([]);
  });

  test("a stream without a table takes them as before (NDJSON keeps any name)", () => {
    const p = plan(config(null), rows);
    expect(p.rejected).toEqual([]);
    expect(p.newColumns).toBeUndefined();
  });

  test("fieldNameProblem: the rule itself", () => {
    for (const ok of ["a", "A", "with space", "ünïcødé", "a.b", "x".repeat(256), "constructor", "toString"]) expect(fieldNameProblem(ok)).toBeNull();
    for (const bad of ["", "__proto__", "\u0000", "a\nb", "\u007f", "\u0085", "x".repeat(257)]) expect(fieldNameProblem(bad)).not.toBeNull();
  });
});

describe("the column cap", () => {
  test("a row that would take the table past maxColumns is rejected by index; later rows that fit are taken", () => {
    const c = config({ maxColumns: 5 });
    const p = plan(c, [
      { id: "a", ts: at(10, 0), one: 1, two: 2 }, // 4 columns
      { id: "b", ts: at(10, 1), three: 3, four: 4 }, // would be 6
      { id: "c", ts: at(10, 2), three: 3 }, // 5
      { id: "d", ts: at(10, 3), one: 1, two: 2, three: 3 }, // nothing new
      { id: "e", ts: at(10, 4), five: 5 }, // would be 6
    ]);
    expect(accepted(p)).toEqual([0, 2, 3]);
    expect(p.rejected).toEqual([
      { index: 1, error: 'adds 2 new columns ("three", "four") to a table of 4; at most 5 ("table.maxColumns")' },
      { index: 4, error: 'adds 1 new column ("five") to a table of 5; at most 5 ("table.maxColumns")' },
    ]);
    expect(p.newColumns).toEqual(["one", "two", "three"]);
  });

  test("counts the columns the table had when the batch began", () => {
    const c = config({ maxColumns: 4 });
    const p = plan(
      c,
      [
        { id: "a", ts: at(10, 0), old: 1 },
        { id: "b", ts: at(10, 0), fresh: 1 },
        { id: "c", ts: at(10, 0), other: 1 },
      ],
      ["old", "older"],
    );
    expect(accepted(p)).toEqual([0]);
    expect(p.rejected.map((r) => r.index)).toEqual([1, 2]);
  });

  test("rows rejected for another reason add no column", () => {
    const p = plan(config({ maxColumns: 3 }), [
      { ts: at(10, 0), spent: 1 },
      { id: "b", ts: at(10, 0), kept: 1 },
    ]);
    expect(p.rejected).toEqual([{ index: 0, error: "id: missing key column" }]);
    expect(accepted(p)).toEqual([1]);
  });

  test("2,000 new names in one request: the table takes 1,000 columns at most by default", () => {
    const rows = Array.from({ length: 8 }, (_, r) =>
      Object.fromEntries([["id", `r${r}`], ["ts", at(10, r)], ...Array.from({ length: 250 }, (_, i) => [`f${r}_${i}`, i])]),
    );
    const p = plan(config({}), rows);
    expect(accepted(p)).toEqual([0, 1, 2]);
    expect(p.rejected.map((r) => r.index)).toEqual([3, 4, 5, 6, 7]);
    expect(2 + p.newColumns!.length).toBeLessThanOrEqual(DEFAULT_MAX_COLUMNS);
  });

  test("ColumnBudget counts case-insensitively and never twice", () => {
    const b = new ColumnBudget(["a", "A"], 2);
    expect(b.admit({ b: 1 })).toBeNull();
    expect(b.admit({ b: 1, a: 2 })).toBeNull();
    expect(b.admit({ c: 1 })).toMatch(/at most 2/);
    expect(b.newColumns).toEqual(["b"]);
  });

  test("config: maxColumns is optional (default 1,000), at most 10,000, and at least the declared columns", () => {
    expect(maxColumnsOf(config({}))).toBe(1_000);
    expect(config({ maxColumns: 20 }).table).toEqual({ format: "iceberg", maxColumns: 20 });
    const errors = (maxColumns: unknown) => {
      const r = parseStreamConfig({ key: ["id"], mode: "global", schema: { id: "string", a: "int", b: "int" }, table: { format: "iceberg", maxColumns } });
      return r.ok ? [] : r.errors;
    };
    expect(errors(3)).toEqual([]);
    expect(errors(2)).toEqual([{ path: "table.maxColumns", message: "the schema declares 3 columns: maxColumns must be at least that" }]);
    expect(errors(10_001).map((e) => e.path)).toEqual(["table.maxColumns"]);
    expect(errors(1.5).map((e) => e.path)).toEqual(["table.maxColumns"]);
    // Declared columns of a table follow the same name rules.
    const declared = (schema: Record<string, string>, table = true) => {
      const r = parseStreamConfig({ key: ["id"], mode: "global", schema: { id: "string", ...schema }, ...(table ? { table: { format: "iceberg" } } : {}) });
      return r.ok ? [] : r.errors;
    };
    expect(declared({ Amount: "double", amount: "double" })).toEqual([
      { path: "schema", message: 'with a table: fields "Amount" and "amount" differ only in case: a table column cannot tell them apart' },
    ]);
    expect(declared({ "a\u0000": "int" })).toEqual([{ path: "schema", message: 'with a table: field "a\\u0000" has a control character' }]);
    expect(declared({ Amount: "double", amount: "double" }, false)).toEqual([]);
  });
});

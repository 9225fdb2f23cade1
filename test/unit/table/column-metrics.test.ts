/**
 * Column metrics in the manifests (src/table/column-metrics.ts, issue #33):
 * the bytes of each bound are the spec's single-value serialization, string
 * bounds truncated to 16 characters still bound every value, and, read back
 * with independent readers (avsc for the manifests, DuckDB for the Parquet
 * files), every data file's value, null and NaN counts and bounds equal the
 * file's own figures, through appends of typed, sparse rows and a compaction.
 */
import fc from "fast-check";
import { DuckDBInstance } from "@duckdb/node-api";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { appendToTable } from "../../../src/table/append";
import { columnMetrics, compareValues, singleValue, STRING_BOUND_CHARS } from "../../../src/table/column-metrics";
import { compactTable } from "../../../src/table/compact";
import { memoryStore } from "../../../src/table/memory-store";
import { readTableSnapshot } from "../../../src/table/read-snapshot";
import type { IcebergSchema } from "../../../src/table/table-schema";
import { decodeWithAvsc } from "../../support/avsc-reader";
import { writeObjects } from "../../support/iceberg-reader";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const T0 = Date.UTC(2026, 0, 1);

describe("single-value serialization", () => {
  test("the spec's bytes", () => {
    expect(hex(singleValue("int", 1))).toBe("01000000");
    expect(hex(singleValue("int", -2))).toBe("feffffff");
    expect(hex(singleValue("long", 2n ** 40n))).toBe("0000000000010000");
    expect(hex(singleValue("double", 1))).toBe("000000000000f03f");
    expect(hex(singleValue("boolean", true))).toBe("01");
    expect(hex(singleValue("timestamptz", 1_700_000_000_000_000n))).toBe(hex(singleValue("long", 1_700_000_000_000_000n)));
    expect(hex(singleValue("string", "é"))).toBe("c3a9");
  });

  test("string bounds: at most 16 characters, and below / above every value of the file", () => {
    const schema: IcebergSchema = { type: "struct", "schema-id": 0, fields: [{ id: 1, name: "s", required: false, type: "string" }] };
    const text = fc.string({ unit: fc.constantFrom("a", "z", "é", "\u{10ffff}", "\u{1f600}", "\uffff"), maxLength: 30 });
    fc.assert(
      fc.property(fc.array(fc.option(text, { nil: null }), { minLength: 1, maxLength: 20 }), (values) => {
        const m = columnMetrics(
          schema,
          values.map((v) => [v]),
          new Set([1]),
        );
        const present = values.filter((v): v is string => v !== null);
        expect(m.valueCounts.get(1)).toBe(values.length);
        expect(m.nullValueCounts.get(1)).toBe(values.length - present.length);
        if (present.length === 0) {
          expect(m.lowerBounds.has(1)).toBe(false);
          return;
        }
        const lower = new TextDecoder().decode(m.lowerBounds.get(1));
        expect([...lower].length).toBeLessThanOrEqual(STRING_BOUND_CHARS);
        for (const v of present) expect(compareValues("string", lower, v)).toBeLessThanOrEqual(0);
        const upperBytes = m.upperBounds.get(1);
        if (upperBytes === undefined) return; // every kept character the largest there is: no upper bound
        const upper = new TextDecoder().decode(upperBytes);
        expect([...upper].length).toBeLessThanOrEqual(STRING_BOUND_CHARS);
        for (const v of present) expect(compareValues("string", upper, v)).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});

describe("every data file's metrics equal its own figures (avsc + DuckDB)", () => {
  test("typed and sparse appends, then a compaction", async () => {
    const SCHEMA = { id: "string", n: "long", at: "timestamp", price: "double", ok: "boolean", qty: "int" } as const;
    const s = memoryStore();
    const dir = await mkdtemp(join(tmpdir(), "metrics-"));
    const baseUri = `file://${dir}`;
    const random = fc.sample(fc.integer({ min: -1_000, max: 1_000 }), { numRuns: 400, seed: 7 });
    let k = 0;
    const next = () => random[k++ % random.length];
    const row = (i: number) => ({
      id: `order-${String(next() + 1_000).padStart(4, "0")}-${"x".repeat(i % 20)}`,
      ...(i % 3 ? { n: next() * 1_000_003 } : {}),
      ...(i % 4 ? { at: T0 + next() * 60_000 } : {}),
      ...(i % 5 ? { price: next() / 7 } : {}),
      ...(i % 2 ? { ok: next() > 0 } : {}),
      ...(i % 6 ? { qty: next() } : {}),
      ...(i % 7 === 0 ? { note: `n${next()}` } : {}),
    });
    for (let seq = 1; seq <= 4; seq++) {
      const rows = Array.from({ length: 10 * seq }, (_, i) => row(seq * 100 + i));
      await appendToTable(s, { stream: "m", schema: SCHEMA, rows, commitSeq: seq, now: T0 + seq, baseUri });
    }
    await compactTable(s, "m", { minFiles: 2, targetBytes: 1 << 20, now: T0 + 10 });
    await appendToTable(s, { stream: "m", schema: SCHEMA, rows: [row(7), row(8)], commitSeq: 5, now: T0 + 20, baseUri });
    try {
      await writeObjects(s.objects, dir);
      const snapshot = (await readTableSnapshot(s, "m"))!.snapshot;
      const fromUri = (uri: string) => s.get(uri.slice(baseUri.length + 1));
      const list = await decodeWithAvsc((await fromUri(snapshot["manifest-list"]))!);
      const db = await (await DuckDBInstance.create(":memory:")).connect();
      const query = async (sql: string) => (await db.runAndReadAll(sql)).getRowObjectsJson() as Record<string, any>[];
      let checked = 0;
      for (const m of list.records) {
        const manifest = await decodeWithAvsc((await fromUri(m.manifest_path as string))!);
        const fields = JSON.parse(manifest.metadata.schema).fields as { id: number; name: string; type: string }[];
        for (const e of manifest.records) {
          if (e.status === 2) continue;
          const file = e.data_file as Record<string, any>;
          const path = (file.file_path as string).slice("file://".length);
          const map = (a: { key: number; value: any }[] | null) => new Map((a ?? []).map((r) => [r.key, r.value]));
          const [values, nulls, lower, upper] = [map(file.value_counts), map(file.null_value_counts), map(file.lower_bounds), map(file.upper_bounds)];
          const carried = (await query(`SELECT field_id FROM parquet_schema('${path}') WHERE field_id IS NOT NULL`)).map((r) => Number(r.field_id));
          expect([...values.keys()].sort((a, b) => a - b)).toEqual(carried.sort((a, b) => a - b));
          for (const f of fields.filter((x) => carried.includes(x.id))) {
            const col = `"${f.name}"`;
            const as = f.type === "timestamptz" ? `epoch_us(${col})` : col;
            const [fig] = await query(
              `SELECT count(*) AS n, count(${col}) AS present, min(${as})::VARCHAR AS lo, max(${as})::VARCHAR AS hi FROM read_parquet('${path}')`,
            );
            expect(Number(values.get(f.id)), `${f.name} values`).toBe(Number(fig.n));
            expect(Number(file.record_count)).toBe(Number(fig.n));
            expect(Number(nulls.get(f.id)), `${f.name} nulls`).toBe(Number(fig.n) - Number(fig.present));
            if (f.type === "double") expect(Number(map(file.nan_value_counts).get(f.id))).toBe(0);
            if (Number(fig.present) === 0) {
              expect(lower.has(f.id)).toBe(false);
              continue;
            }
            const decode = (b: Buffer): string => {
              const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
              if (f.type === "int") return String(v.getInt32(0, true));
              if (f.type === "long" || f.type === "timestamptz") return String(v.getBigInt64(0, true));
              if (f.type === "double") return String(v.getFloat64(0, true));
              if (f.type === "boolean") return b[0] === 1 ? "true" : "false";
              return b.toString("utf8");
            };
            const want = (x: string) => (f.type === "double" ? String(Number(x)) : x);
            if (f.type === "string") {
              // ids are longer than 16 characters: truncated, still bounds
              expect(decode(lower.get(f.id)) <= fig.lo && fig.lo.startsWith(decode(lower.get(f.id)))).toBe(true);
              expect(decode(upper.get(f.id)) >= fig.hi).toBe(true);
            } else {
              expect(decode(lower.get(f.id)), `${f.name} lower`).toBe(want(fig.lo));
              expect(decode(upper.get(f.id)), `${f.name} upper`).toBe(want(fig.hi));
            }
          }
          checked++;
        }
      }
      expect(checked).toBe(2); // the compacted file and the last append
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import type { IcebergSchema, IcebergType } from "./table-schema";
import type { TableValue } from "./values";

/**
 * A data file's column metrics, as its manifest entry carries them (Iceberg
 * v2 `value_counts`, `null_value_counts`, `nan_value_counts`,
 * `lower_bounds`, `upper_bounds`, keyed by field id): engines skip a file
 * whose bounds cannot hold what a query asks for. Bounds are the spec's
 * single-value serialization (Appendix D): int 4 bytes and long 8 bytes
 * little-endian, double IEEE 754 little-endian, boolean one byte, timestamptz
 * microseconds as a long, string UTF-8, truncated to 16 characters as
 * Iceberg's default `truncate(16)` metrics mode does (a lower bound's prefix;
 * an upper bound's prefix with its last character incremented, none if that
 * cannot be done).
 */
export interface ColumnMetrics {
  valueCounts: Map<number, number>;
  nullValueCounts: Map<number, number>;
  nanValueCounts: Map<number, number>;
  lowerBounds: Map<number, Uint8Array>;
  upperBounds: Map<number, Uint8Array>;
}

/** Characters of a string bound kept (Iceberg's default metrics mode). */
export const STRING_BOUND_CHARS = 16;

/** The metrics of the columns `carried` (field ids: the columns the file holds) over rows aligned with `schema.fields`. */
export function columnMetrics(schema: IcebergSchema, rows: readonly (readonly TableValue[])[], carried: ReadonlySet<number>): ColumnMetrics {
  const m: ColumnMetrics = { valueCounts: new Map(), nullValueCounts: new Map(), nanValueCounts: new Map(), lowerBounds: new Map(), upperBounds: new Map() };
  schema.fields.forEach((f, i) => {
    if (!carried.has(f.id)) return;
    let nulls = 0;
    let lo: TableValue = null;
    let hi: TableValue = null;
    for (const r of rows) {
      const v = r[i];
      if (v === null) {
        nulls++;
        continue;
      }
      if (lo === null || compareValues(f.type, v, lo) < 0) lo = v;
      if (hi === null || compareValues(f.type, v, hi) > 0) hi = v;
    }
    m.valueCounts.set(f.id, rows.length);
    m.nullValueCounts.set(f.id, nulls);
    if (f.type === "double") m.nanValueCounts.set(f.id, 0); // table doubles are finite (src/table/values.ts)
    if (lo === null || hi === null) return;
    const lower = f.type === "string" ? truncatedLower(lo as string) : lo;
    const upper = f.type === "string" ? truncatedUpper(hi as string) : hi;
    m.lowerBounds.set(f.id, singleValue(f.type, lower));
    if (upper !== null) m.upperBounds.set(f.id, singleValue(f.type, upper));
  });
  return m;
}

/** Iceberg's order: numbers and timestamps by value, booleans false first, strings by their UTF-8 bytes (= code points). */
export function compareValues(type: IcebergType, a: TableValue, b: TableValue): number {
  if (type === "string") return compareCodePoints(a as string, b as string);
  if (type === "boolean") return Number(a) - Number(b);
  return a! < b! ? -1 : a! > b! ? 1 : 0;
}

function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x - y;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return a.length - i - (b.length - j);
}

const truncatedLower = (s: string) => [...s].slice(0, STRING_BOUND_CHARS).join("");

/** The shortest string of at most STRING_BOUND_CHARS characters not below s, or null (every character the largest). */
function truncatedUpper(s: string): string | null {
  const chars = [...s];
  if (chars.length <= STRING_BOUND_CHARS) return s;
  const kept = chars.slice(0, STRING_BOUND_CHARS);
  for (let i = kept.length - 1; i >= 0; i--) {
    let next = kept[i].codePointAt(0)! + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000; // not a surrogate
    if (next <= 0x10ffff) return kept.slice(0, i).join("") + String.fromCodePoint(next);
  }
  return null;
}

/** A value's single-value serialization (Iceberg spec, Appendix D). */
export function singleValue(type: IcebergType, v: TableValue): Uint8Array {
  switch (type) {
    case "int": {
      const out = new Uint8Array(4);
      new DataView(out.buffer).setInt32(0, v as number, true);
      return out;
    }
    case "long":
    case "timestamptz": {
      const out = new Uint8Array(8);
      new DataView(out.buffer).setBigInt64(0, BigInt(v as bigint | number), true);
      return out;
    }
    case "double": {
      const out = new Uint8Array(8);
      new DataView(out.buffer).setFloat64(0, v as number, true);
      return out;
    }
    case "boolean":
      return Uint8Array.of(v ? 1 : 0);
    case "string":
      return new TextEncoder().encode(v as string);
  }
}

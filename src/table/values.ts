import type { ColumnType } from "../stream/config";
import { parseTimestamp } from "../stream/schema";
import type { IcebergType } from "./table-schema";

/**
 * A row value as the table stores it, by the column's table type. Rows come
 * validated (declared columns already coerced), so the only values that can
 * fail here belong to a column whose declaration changed to a type the table
 * cannot take (the table keeps its type): that fails the append loudly rather
 * than writing a null in its place.
 */
export class TableValueError extends Error {}

export type TableValue = number | bigint | boolean | string | null;

export function toTableValue(column: string, type: IcebergType, declared: ColumnType | undefined, value: unknown): TableValue {
  if (value === undefined || value === null) return null;
  const fail = (): never => {
    throw new TableValueError(`${column}: ${JSON.stringify(value)} does not fit the table's ${type} column`);
  };
  switch (type) {
    case "string":
      return typeof value === "string" ? value : JSON.stringify(value);
    case "int":
    case "long": {
      const n = typeof value === "string" && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
      if (typeof n !== "number" || !Number.isSafeInteger(n)) return fail();
      if (type === "int" && (n < -2147483648 || n > 2147483647)) return fail();
      return type === "int" ? n : BigInt(n);
    }
    case "double": {
      const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      return typeof n === "number" && Number.isFinite(n) ? n : fail();
    }
    case "boolean":
      if (typeof value === "boolean") return value;
      return value === "true" || value === "false" ? value === "true" : fail();
    case "timestamptz": {
      // The instant the stream reads (a bare number by the declared unit), in the microseconds Iceberg stores.
      const ms = parseTimestamp(value, declared === "timestamp:s" ? "s" : "ms");
      return ms === null ? fail() : BigInt(ms) * 1000n;
    }
  }
}

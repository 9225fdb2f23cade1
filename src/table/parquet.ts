import { parquetMetadata, parquetReadObjects, type SchemaElement } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";
import type { IcebergField, IcebergSchema, IcebergType } from "./table-schema";
import type { TableValue } from "./values";

/**
 * Data files: Parquet with an Iceberg field id on every column (readers such
 * as Spark, PyIceberg and DuckDB resolve columns by id, not name) and the
 * schema in the `iceberg.schema` key, as Iceberg's own writer does. Every
 * column is optional; timestamps are INT64 microseconds adjusted to UTC.
 */
function elementOf(field: IcebergField): SchemaElement {
  const base = { name: field.name, field_id: field.id, repetition_type: "OPTIONAL" } as const;
  const byType: Record<IcebergType, Omit<SchemaElement, "name">> = {
    int: { type: "INT32" },
    long: { type: "INT64" },
    double: { type: "DOUBLE" },
    boolean: { type: "BOOLEAN" },
    string: { type: "BYTE_ARRAY", converted_type: "UTF8", logical_type: { type: "STRING" } },
    timestamptz: { type: "INT64", converted_type: "TIMESTAMP_MICROS", logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MICROS" } },
  };
  return { ...byType[field.type], ...base };
}

/** Rows as arrays aligned with `schema.fields` → the file's bytes. */
export function encodeDataFile(schema: IcebergSchema, rows: readonly (readonly TableValue[])[]): Uint8Array {
  const buffer = parquetWriteBuffer({
    columnData: schema.fields.map((f, i) => ({ name: f.name, data: rows.map((r) => r[i]) })),
    schema: [{ name: "table", num_children: schema.fields.length }, ...schema.fields.map(elementOf)],
    kvMetadata: [{ key: "iceberg.schema", value: JSON.stringify(schema) }],
    createdBy: "edge-dedup",
  });
  return new Uint8Array(buffer);
}

// Timestamps stay in the microseconds they were written in (hyparquet would make Dates of them).
const RAW_TIMESTAMPS = { timestampFromMicroseconds: (micros: bigint) => micros };

/**
 * A data file's rows as arrays aligned with `schema` (the table's current
 * schema): columns are matched by field id, so a file written before a column
 * existed reads it as null, and an int column since widened to long reads as long.
 */
export async function decodeDataFile(schema: IcebergSchema, bytes: Uint8Array): Promise<TableValue[][]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const metadata = parquetMetadata(file);
  const nameById = new Map(metadata.schema.filter((e) => e.field_id !== undefined).map((e) => [e.field_id, e.name]));
  const objects = await parquetReadObjects({ file, metadata, parsers: RAW_TIMESTAMPS, utf8: true });
  return objects.map((o) =>
    schema.fields.map((f) => {
      const name = nameById.get(f.id);
      const v = name === undefined ? null : ((o as Record<string, unknown>)[name] ?? null);
      return f.type === "long" && typeof v === "number" ? BigInt(v) : (v as TableValue);
    }),
  );
}

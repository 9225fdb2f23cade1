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

/**
 * Rows as arrays aligned with `schema.fields` → the file's bytes. A file
 * carries the columns `always` names (by default all) and those some row has
 * a value in: readers take a column missing from a file as null (by field id,
 * as for a file written before the column existed). Writing every column of a
 * wide table made a one-row file 8 MB.
 */
export function encodeDataFile(
  schema: IcebergSchema,
  rows: readonly (readonly TableValue[])[],
  always: (field: IcebergField) => boolean = () => true,
): Uint8Array {
  const used = schema.fields.flatMap((f, i) => (always(f) || rows.some((r) => r[i] !== null) ? [i] : []));
  // A file with no column at all is not Parquet that readers take: keep the first.
  const columns = used.length > 0 || schema.fields.length === 0 ? used : [0];
  const fields = columns.map((i) => schema.fields[i]);
  const buffer = parquetWriteBuffer({
    columnData: columns.map((i) => ({ name: schema.fields[i].name, data: rows.map((r) => r[i]) })),
    schema: [{ name: "table", num_children: fields.length }, ...fields.map(elementOf)],
    kvMetadata: [{ key: "iceberg.schema", value: JSON.stringify({ ...schema, fields }) }],
    createdBy: "edge-dedup",
  });
  return new Uint8Array(buffer);
}

/** The field ids of the columns a data file carries. */
export function dataFileFieldIds(bytes: Uint8Array): Set<number> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return new Set(parquetMetadata(file).schema.flatMap((e) => (e.field_id === undefined ? [] : [e.field_id])));
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

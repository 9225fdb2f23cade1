import type { PartitionBy } from "../stream/table-options";
import type { AvroField } from "./avro-binary";
import type { IcebergSchema } from "./table-schema";

/**
 * How a table's data files are partitioned: by Iceberg's own `day` or
 * `hour` transform of the event-time column (a timestamptz), or not at all.
 * Each data file holds one partition value, which its manifest entry records
 * in `partition` (Iceberg v2: day → a date, days since 1970-01-01; hour → an
 * int, hours since 1970-01-01 00:00 UTC), so an engine asking for one hour
 * reads only that hour's files. A table whose wanted spec changes gains a
 * new spec for the files written after (spec evolution); its older files
 * keep the spec they were written with. Pure.
 */
export type { PartitionBy };
export type Transform = "day" | "hour";

export interface PartitionField {
  "source-id": number;
  "field-id": number;
  name: string;
  transform: Transform;
}

export interface PartitionSpec {
  "spec-id": number;
  fields: PartitionField[];
}

/** A data file's partition values, aligned with its spec's fields (null: the source column was null). */
export type PartitionValues = (number | null)[];

/** Partition field ids start at 1000 (the spec's rule); an unpartitioned table records 999 as the last. */
export const FIRST_PARTITION_FIELD_ID = 1000;

const MICROS_PER: Record<Transform, bigint> = { day: 86_400_000_000n, hour: 3_600_000_000n };

/** The transform of a timestamptz value (microseconds, as the table stores it): floor division, so instants before 1970 fall in the right day. */
export function transformValue(transform: Transform, micros: bigint | null): number | null {
  if (micros === null) return null;
  const unit = MICROS_PER[transform];
  const q = micros / unit;
  return Number(micros % unit < 0n ? q - 1n : q);
}

/**
 * Why the table cannot be partitioned `by` on `eventTime` (null: it can).
 * The source must be a timestamptz column: a table made by an earlier
 * release may hold an undeclared event-time column as strings.
 */
export function partitionProblem(schema: IcebergSchema, by: PartitionBy, eventTime: string | null): string | null {
  if (by === "none") return null;
  if (eventTime === null) return "the stream has no event-time column";
  const field = schema.fields.find((f) => f.name === eventTime);
  if (!field) return `the table has no column ${eventTime}`;
  if (field.type !== "timestamptz") return `the table's column ${eventTime} is a ${field.type} column, not a timestamptz (an earlier table made it so)`;
  return null;
}

/** The spec fields the table wants (without ids): [] for none, or when the column cannot be partitioned by (partitionProblem). */
export function wantedFields(schema: IcebergSchema, by: PartitionBy, eventTime: string | null): Omit<PartitionField, "field-id">[] {
  if (by === "none" || partitionProblem(schema, by, eventTime) !== null) return [];
  const source = schema.fields.find((f) => f.name === eventTime)!;
  const taken = new Set(schema.fields.map((f) => f.name));
  let name = `${source.name}_${by}`;
  for (let n = 1; taken.has(name); n++) name = `${source.name}_${by}_${n}`;
  return [{ "source-id": source.id, name, transform: by }];
}

export interface SpecState {
  "partition-specs": PartitionSpec[];
  "default-spec-id": number;
  "last-partition-id": number;
}

const sameFields = (a: readonly Omit<PartitionField, "field-id">[], b: readonly PartitionField[]) =>
  a.length === b.length && a.every((f, i) => f["source-id"] === b[i]["source-id"] && f.transform === b[i].transform);

/**
 * The table's specs with `wanted` as the default (`fresh`: a table before its
 * first snapshot, whose spec 0 is the wanted one): the same object when it
 * already is; an existing equal spec made default again; else a new spec
 * whose field reuses the id of an equal field of an older spec (v2's rule)
 * or takes the next one.
 */
export function evolveSpec(table: SpecState, wanted: readonly Omit<PartitionField, "field-id">[], fresh = false): SpecState {
  // A new table starts with the wanted spec as spec 0, as Iceberg's writers create one.
  if (fresh) {
    const fields = wanted.map((f, i) => ({ ...f, "field-id": FIRST_PARTITION_FIELD_ID + i }));
    return { "partition-specs": [{ "spec-id": 0, fields }], "default-spec-id": 0, "last-partition-id": FIRST_PARTITION_FIELD_ID - 1 + fields.length };
  }
  const specs = table["partition-specs"];
  const current = specs.find((s) => s["spec-id"] === table["default-spec-id"]);
  if (current && sameFields(wanted, current.fields)) return table;
  const existing = specs.find((s) => sameFields(wanted, s.fields));
  if (existing) return { ...table, "default-spec-id": existing["spec-id"] };
  let last = table["last-partition-id"];
  const fields = wanted.map((f) => {
    const reused = specs.flatMap((s) => s.fields).find((o) => o["source-id"] === f["source-id"] && o.transform === f.transform);
    return { ...f, "field-id": reused ? reused["field-id"] : ++last };
  });
  const specId = Math.max(...specs.map((s) => s["spec-id"])) + 1;
  return { "partition-specs": [...specs, { "spec-id": specId, fields }], "default-spec-id": specId, "last-partition-id": last };
}

export function specById(table: SpecState, specId: number): PartitionSpec {
  const spec = table["partition-specs"].find((s) => s["spec-id"] === specId);
  if (!spec) throw new Error(`the table has no partition spec ${specId}`);
  return spec;
}

/** The partition values of a row (aligned with `schema.fields`, timestamps as micros). */
export function partitionOf(spec: PartitionSpec, schema: IcebergSchema, row: readonly unknown[]): PartitionValues {
  return spec.fields.map((f) => {
    const i = schema.fields.findIndex((c) => c.id === f["source-id"]);
    return transformValue(f.transform, (row[i] as bigint | null | undefined) ?? null);
  });
}

/** A key that two files share exactly when they hold the same partition of the same spec. */
export const partitionKey = (specId: number, values: PartitionValues) => `${specId}:${values.join(",")}`;

/** The `partition` record of a manifest entry's data file: one optional field per spec field, with its field id. */
export function partitionAvroFields(spec: PartitionSpec): AvroField[] {
  return spec.fields.map((f) => ({
    name: f.name,
    type: ["null", f.transform === "day" ? { type: "int", logicalType: "date" } : "int"],
    default: null,
    "field-id": f["field-id"],
  }));
}

export const partitionRecord = (spec: PartitionSpec, values: PartitionValues) => Object.fromEntries(spec.fields.map((f, i) => [f.name, values[i] ?? null]));

/** How Iceberg names a partition in paths and its tools: `ts_day=2024-01-01`, `ts_hour=2024-01-01-10`; "" unpartitioned. */
export function partitionLabel(spec: PartitionSpec, values: PartitionValues): string {
  return spec.fields
    .map((f, i) => {
      const v = values[i];
      if (v === null || v === undefined) return `${f.name}=null`;
      const iso = new Date(v * (f.transform === "day" ? 86_400_000 : 3_600_000)).toISOString();
      return `${f.name}=${f.transform === "day" ? iso.slice(0, 10) : `${iso.slice(0, 10)}-${iso.slice(11, 13)}`}`;
    })
    .join("/");
}

/** A manifest list's field summary of one partition field (date and int values are 4-byte little-endian). */
export interface FieldSummary {
  contains_null: boolean;
  contains_nan: boolean | null;
  lower_bound: Uint8Array | null;
  upper_bound: Uint8Array | null;
}

const int4 = (v: number) => {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, v, true);
  return out;
};

/** The manifest list's `partitions` of a manifest whose files have these values: each field's null flag and bounds. */
export function fieldSummaries(spec: PartitionSpec, files: readonly PartitionValues[]): FieldSummary[] {
  return spec.fields.map((_, i) => {
    const values = files.map((p) => p[i] ?? null);
    const present = values.filter((v): v is number => v !== null);
    return {
      contains_null: present.length < values.length,
      contains_nan: false,
      lower_bound: present.length > 0 ? int4(present.reduce((a, b) => Math.min(a, b))) : null,
      upper_bound: present.length > 0 ? int4(present.reduce((a, b) => Math.max(a, b))) : null,
    };
  });
}

import { isTimestampType, type ColumnType } from "../stream/config";
import { caseFold, fieldNameProblem } from "../stream/table-fields";

/**
 * The Iceberg schema of a stream's table and how it grows. Columns the stream
 * declares get their type; columns only seen in rows are strings (their JSON
 * text, or the string itself). A column's field id and type are fixed the
 * first time it appears, with one exception Iceberg allows: int widens to
 * long. A later declaration of another type does not retype the column: its
 * values are written by the table's type (see values.ts). New columns, declared
 * or seen, are appended as optional fields with fresh ids in a new schema.
 */
export type IcebergType = "int" | "long" | "double" | "boolean" | "string" | "timestamptz";

export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
}

export interface IcebergSchema {
  type: "struct";
  "schema-id": number;
  fields: IcebergField[];
}

export function icebergTypeOf(type: ColumnType | undefined): IcebergType {
  if (type === undefined) return "string";
  if (isTimestampType(type)) return "timestamptz";
  return type;
}

/**
 * The schema the rows need, given the current one (null for a new table) and
 * the last column id used; the same object back when nothing changes. The
 * ingest planner keeps rows the table cannot take out of the output
 * (src/stream/table-fields.ts); this enforces the same rules again for rows
 * that got past it (committed before the table was configured, or by batches
 * that ran side by side near the cap): a field whose name cannot be a column,
 * differs only in case from a column, or would be a column past
 * `maxColumns` is left out of the table (the row's other fields are written;
 * the NDJSON output keeps the row whole) and listed in `dropped`.
 */
export function evolveSchema(
  current: IcebergSchema | null,
  lastColumnId: number,
  declared: Readonly<Record<string, ColumnType>>,
  rows: readonly Record<string, unknown>[],
  maxColumns = Number.POSITIVE_INFINITY,
): { schema: IcebergSchema; lastColumnId: number; dropped: string[] } {
  const fields = current ? current.fields.map((f) => ({ ...f })) : [];
  const byName = new Map(fields.map((f) => [f.name, f]));
  const folded = new Set(fields.map((f) => caseFold(f.name)));
  const dropped = new Set<string>();
  let changed = current === null;
  let nextId = lastColumnId;
  const see = (name: string, type: IcebergType) => {
    const field = byName.get(name);
    if (!field) {
      const added: IcebergField = { id: ++nextId, name, required: false, type };
      fields.push(added);
      byName.set(name, added);
      folded.add(caseFold(name));
      changed = true;
    } else if (field.type === "int" && type === "long") {
      field.type = "long";
      changed = true;
    }
  };
  // Declared columns always fit: the config refuses a cap below their count.
  for (const [name, type] of Object.entries(declared)) see(name, icebergTypeOf(type));
  for (const row of rows) {
    for (const name of Object.keys(row)) {
      if (byName.has(name) || dropped.has(name)) continue;
      if (fieldNameProblem(name) !== null || folded.has(caseFold(name)) || fields.length >= maxColumns) dropped.add(name);
      else see(name, "string");
    }
  }
  if (!changed && current) return { schema: current, lastColumnId, dropped: [...dropped] };
  const schemaId = current ? current["schema-id"] + 1 : 0;
  return { schema: { type: "struct", "schema-id": schemaId, fields }, lastColumnId: nextId, dropped: [...dropped] };
}

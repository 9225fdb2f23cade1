import type { AvroField, AvroSchema } from "./avro-binary";
import { decodeAvroFile, encodeAvroFile } from "./avro-file";
import type { ColumnMetrics } from "./column-metrics";
import { fieldSummaries, partitionAvroFields, partitionRecord, type FieldSummary, type PartitionSpec, type PartitionValues } from "./partitioning";
import type { IcebergSchema } from "./table-schema";

/**
 * Iceberg v2 manifests (one entry per data file) and manifest lists (one
 * entry per manifest), with the spec's Avro schemas and field ids. A manifest
 * holds the files of one partition spec (src/table/partitioning.ts): each
 * entry's `partition` record has a field per spec field, and the manifest
 * list records the spec's id and each field's summary (null flag, bounds),
 * so a reader skips whole manifests. A data file's column metrics (src/table/column-metrics.ts)
 * are written when it was (files of earlier releases have none: null, which
 * readers take as "scan it"), and carried wherever its entry is rewritten.
 */
const optional = (name: string, type: AvroSchema, id: number): AvroField => ({ name, type: ["null", type], default: null, "field-id": id });
const required = (name: string, type: AvroSchema, id: number): AvroField => ({ name, type, "field-id": id });
/** Iceberg writes a map with int keys as an Avro array of key/value records. */
const intMap = (name: string, id: number, keyId: number, valueId: number, value: AvroSchema) =>
  optional(
    name,
    {
      type: "array",
      logicalType: "map",
      items: {
        type: "record",
        name: `k${keyId}_v${valueId}`,
        fields: [required("key", "int", keyId), required("value", value, valueId)],
      },
    },
    id,
  );

const manifestEntrySchema = (spec: PartitionSpec): AvroSchema => ({
  type: "record",
  name: "manifest_entry",
  fields: [
    required("status", "int", 0),
    optional("snapshot_id", "long", 1),
    optional("sequence_number", "long", 3),
    optional("file_sequence_number", "long", 4),
    required(
      "data_file",
      {
        type: "record",
        name: "r2",
        fields: [
          required("content", "int", 134),
          required("file_path", "string", 100),
          required("file_format", "string", 101),
          required("partition", { type: "record", name: "r102", fields: partitionAvroFields(spec) }, 102),
          required("record_count", "long", 103),
          required("file_size_in_bytes", "long", 104),
          intMap("column_sizes", 108, 117, 118, "long"),
          intMap("value_counts", 109, 119, 120, "long"),
          intMap("null_value_counts", 110, 121, 122, "long"),
          intMap("nan_value_counts", 137, 138, 139, "long"),
          intMap("lower_bounds", 125, 126, 127, "bytes"),
          intMap("upper_bounds", 128, 129, 130, "bytes"),
          optional("key_metadata", "bytes", 131),
          optional("split_offsets", { type: "array", items: "long", "element-id": 133 }, 132),
          optional("equality_ids", { type: "array", items: "int", "element-id": 136 }, 135),
          optional("sort_order_id", "int", 140),
        ],
      },
      2,
    ),
  ],
});

const MANIFEST_FILE_SCHEMA: AvroSchema = {
  type: "record",
  name: "manifest_file",
  fields: [
    required("manifest_path", "string", 500),
    required("manifest_length", "long", 501),
    required("partition_spec_id", "int", 502),
    required("content", "int", 517),
    required("sequence_number", "long", 515),
    required("min_sequence_number", "long", 516),
    required("added_snapshot_id", "long", 503),
    required("added_files_count", "int", 504),
    required("existing_files_count", "int", 505),
    required("deleted_files_count", "int", 506),
    required("added_rows_count", "long", 512),
    required("existing_rows_count", "long", 513),
    required("deleted_rows_count", "long", 514),
    optional(
      "partitions",
      {
        type: "array",
        "element-id": 508,
        items: {
          type: "record",
          name: "r508",
          fields: [
            required("contains_null", "boolean", 509),
            optional("contains_nan", "boolean", 518),
            optional("lower_bound", "bytes", 510),
            optional("upper_bound", "bytes", 511),
          ],
        },
      },
      507,
    ),
    optional("key_metadata", "bytes", 519),
  ],
};

export const STATUS = { existing: 0, added: 1, deleted: 2 } as const;

/** A data file as a manifest entry describes it, with inherited values resolved. */
export interface DataFileEntry {
  status: (typeof STATUS)[keyof typeof STATUS];
  snapshotId: number;
  /** the data sequence number: that of the snapshot that added the file */
  sequenceNumber: number;
  fileSequenceNumber: number;
  path: string;
  recordCount: number;
  sizeInBytes: number;
  /** its column metrics (absent: a file written before they were) */
  metrics?: ColumnMetrics;
  /** the partition spec it was written with, and its values under it ([] unpartitioned) */
  specId: number;
  partition: PartitionValues;
}

export interface ManifestFile {
  path: string;
  length: number;
  /** the partition spec of every file it lists, and the summary of their values per spec field */
  specId: number;
  partitions: FieldSummary[];
  sequenceNumber: number;
  minSequenceNumber: number;
  addedSnapshotId: number;
  addedFiles: number;
  existingFiles: number;
  deletedFiles: number;
  addedRows: number;
  existingRows: number;
  deletedRows: number;
}

/**
 * A manifest's bytes. Entries the snapshot being committed adds leave their
 * sequence numbers null, to be inherited from the manifest list (the spec's
 * rule: the number is assigned only when the commit succeeds).
 */
export function encodeManifest(schema: IcebergSchema, spec: PartitionSpec, entries: readonly DataFileEntry[]): Uint8Array {
  const records = entries.map((e) => {
    if (e.specId !== spec["spec-id"]) throw new Error(`a manifest of spec ${spec["spec-id"]} cannot list ${e.path} (spec ${e.specId})`);
    const added = e.status === STATUS.added;
    return {
      status: e.status,
      snapshot_id: e.snapshotId,
      sequence_number: added ? null : e.sequenceNumber,
      file_sequence_number: added ? null : e.fileSequenceNumber,
      data_file: {
        content: 0,
        file_path: e.path,
        file_format: "PARQUET",
        partition: partitionRecord(spec, e.partition),
        record_count: e.recordCount,
        file_size_in_bytes: e.sizeInBytes,
        column_sizes: null,
        value_counts: toAvroMap(e.metrics?.valueCounts),
        null_value_counts: toAvroMap(e.metrics?.nullValueCounts),
        nan_value_counts: toAvroMap(e.metrics?.nanValueCounts),
        lower_bounds: toAvroMap(e.metrics?.lowerBounds),
        upper_bounds: toAvroMap(e.metrics?.upperBounds),
        key_metadata: null,
        split_offsets: null,
        equality_ids: null,
        sort_order_id: null,
      },
    };
  });
  const metadata = {
    schema: JSON.stringify(schema),
    "schema-id": String(schema["schema-id"]),
    "partition-spec": JSON.stringify(spec.fields),
    "partition-spec-id": String(spec["spec-id"]),
    "format-version": "2",
    content: "data",
  };
  return encodeAvroFile(manifestEntrySchema(spec), metadata, records);
}

/** A manifest's entries, inheriting snapshot id and sequence numbers from its manifest list entry where null. */
export function decodeManifest(bytes: Uint8Array, from: ManifestFile): DataFileEntry[] {
  const avro = decodeAvroFile(bytes);
  // The partition record's fields in spec order, by name (a manifest of an earlier release has none).
  const fields = (JSON.parse(avro.metadata["partition-spec"] ?? "[]") as { name: string }[]).map((f) => f.name);
  return avro.records.map((r) => {
    const file = r.data_file as Record<string, unknown>;
    const partition = (file.partition ?? {}) as Record<string, number | null>;
    const sequenceNumber = (r.sequence_number as number | null) ?? from.sequenceNumber;
    return {
      status: r.status as DataFileEntry["status"],
      snapshotId: (r.snapshot_id as number | null) ?? from.addedSnapshotId,
      sequenceNumber,
      fileSequenceNumber: (r.file_sequence_number as number | null) ?? sequenceNumber,
      path: file.file_path as string,
      recordCount: file.record_count as number,
      sizeInBytes: file.file_size_in_bytes as number,
      ...metricsOf(file),
      specId: from.specId,
      partition: fields.map((name) => partition[name] ?? null),
    };
  });
}

/** A map keyed by field id as Iceberg writes it in Avro: an array of key/value records, in key order. */
const toAvroMap = <V>(m: ReadonlyMap<number, V> | undefined) => (m ? [...m].sort((a, b) => a[0] - b[0]).map(([key, value]) => ({ key, value })) : null);
const fromAvroMap = <V>(a: unknown): Map<number, V> => new Map(((a as { key: number; value: V }[] | null) ?? []).map((r) => [r.key, r.value]));

/** A data file record's metrics, if it was written with them (value_counts present). */
function metricsOf(file: Record<string, unknown>): { metrics?: ColumnMetrics } {
  if (file.value_counts === null || file.value_counts === undefined) return {};
  return {
    metrics: {
      valueCounts: fromAvroMap<number>(file.value_counts),
      nullValueCounts: fromAvroMap<number>(file.null_value_counts),
      nanValueCounts: fromAvroMap<number>(file.nan_value_counts),
      lowerBounds: fromAvroMap<Uint8Array>(file.lower_bounds),
      upperBounds: fromAvroMap<Uint8Array>(file.upper_bounds),
    },
  };
}

export function encodeManifestList(
  snapshot: { snapshotId: number; parentSnapshotId: number | null; sequenceNumber: number },
  manifests: readonly ManifestFile[],
): Uint8Array {
  const records = manifests.map((m) => ({
    manifest_path: m.path,
    manifest_length: m.length,
    partition_spec_id: m.specId,
    content: 0,
    sequence_number: m.sequenceNumber,
    min_sequence_number: m.minSequenceNumber,
    added_snapshot_id: m.addedSnapshotId,
    added_files_count: m.addedFiles,
    existing_files_count: m.existingFiles,
    deleted_files_count: m.deletedFiles,
    added_rows_count: m.addedRows,
    existing_rows_count: m.existingRows,
    deleted_rows_count: m.deletedRows,
    partitions: m.partitions,
    key_metadata: null,
  }));
  const metadata: Record<string, string> = {
    "snapshot-id": String(snapshot.snapshotId),
    "sequence-number": String(snapshot.sequenceNumber),
    "format-version": "2",
  };
  if (snapshot.parentSnapshotId !== null) metadata["parent-snapshot-id"] = String(snapshot.parentSnapshotId);
  return encodeAvroFile(MANIFEST_FILE_SCHEMA, metadata, records);
}

export function decodeManifestList(bytes: Uint8Array): ManifestFile[] {
  return decodeAvroFile(bytes).records.map((r) => ({
    path: r.manifest_path as string,
    length: r.manifest_length as number,
    specId: r.partition_spec_id as number,
    partitions: (r.partitions as FieldSummary[] | null) ?? [],
    sequenceNumber: r.sequence_number as number,
    minSequenceNumber: r.min_sequence_number as number,
    addedSnapshotId: r.added_snapshot_id as number,
    addedFiles: r.added_files_count as number,
    existingFiles: r.existing_files_count as number,
    deletedFiles: r.deleted_files_count as number,
    addedRows: r.added_rows_count as number,
    existingRows: r.existing_rows_count as number,
    deletedRows: r.deleted_rows_count as number,
  }));
}

/** The manifest list entry of a manifest this commit writes: its counts by entry status. */
export function manifestFileOf(
  path: string,
  length: number,
  snapshotId: number,
  sequenceNumber: number,
  spec: PartitionSpec,
  entries: readonly DataFileEntry[],
): ManifestFile {
  const count = (s: number) => entries.filter((e) => e.status === s);
  const rows = (es: DataFileEntry[]) => es.reduce((n, e) => n + e.recordCount, 0);
  const [added, existing, deleted] = [count(STATUS.added), count(STATUS.existing), count(STATUS.deleted)];
  const live = [...existing.map((e) => e.sequenceNumber), ...(added.length > 0 ? [sequenceNumber] : [])];
  return {
    path,
    length,
    specId: spec["spec-id"],
    // Iceberg summarises the files a manifest adds or keeps; a deleted entry's partition is no longer in the snapshot.
    partitions: fieldSummaries(
      spec,
      [...added, ...existing].map((e) => e.partition),
    ),
    sequenceNumber,
    minSequenceNumber: live.length > 0 ? Math.min(...live) : sequenceNumber,
    addedSnapshotId: snapshotId,
    addedFiles: added.length,
    existingFiles: existing.length,
    deletedFiles: deleted.length,
    addedRows: rows(added),
    existingRows: rows(existing),
    deletedRows: rows(deleted),
  };
}

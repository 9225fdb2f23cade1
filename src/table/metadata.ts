import type { PartitionSpec } from "./partitioning";
import type { IcebergSchema } from "./table-schema";

/**
 * Iceberg v2 table metadata (the `vN.metadata.json` document) and the pure
 * steps that make the next version from the current one.
 */
export interface Snapshot {
  "snapshot-id": number;
  "parent-snapshot-id"?: number;
  "sequence-number": number;
  "timestamp-ms": number;
  "manifest-list": string;
  summary: { operation: "append" | "replace" } & Record<string, string>;
  "schema-id": number;
}

export interface TableMetadata {
  "format-version": 2;
  "table-uuid": string;
  location: string;
  "last-sequence-number": number;
  "last-updated-ms": number;
  "last-column-id": number;
  schemas: IcebergSchema[];
  "current-schema-id": number;
  "partition-specs": PartitionSpec[];
  "default-spec-id": number;
  "last-partition-id": number;
  properties: Record<string, string>;
  "current-snapshot-id": number;
  snapshots: Snapshot[];
  "snapshot-log": { "timestamp-ms": number; "snapshot-id": number }[];
  "metadata-log": { "timestamp-ms": number; "metadata-file": string }[];
  "sort-orders": { "order-id": number; fields: unknown[] }[];
  "default-sort-order-id": number;
  refs: Record<string, { "snapshot-id": number; type: "branch" | "tag" }>;
}

/** The summary key that records the highest commit sequence a snapshot contains (Delta's txnVersion). */
export const COMMIT_SEQ_KEY = "edge-dedup.commit-seq";
/** The summary key that counts the fields of an append's rows the table left out (src/table/table-schema.ts). */
export const DROPPED_FIELDS_KEY = "edge-dedup.dropped-fields";
/** Java's default for `write.metadata.previous-versions-max`; snapshots are kept as many. */
export const HISTORY_MAX = 100;
/**
 * At most this many distinct schemas stay in the metadata, with the snapshots
 * that use them. Every schema holds every column, so keeping one per
 * schema-widening append made each version carry all earlier schemas: the
 * metadata grew with the square of the columns (9.3 MB after 16,000).
 */
export const SCHEMA_HISTORY_MAX = 10;

/** A table before its first snapshot; it is only ever written together with one. */
export function emptyTable(location: string, uuid: string, now: number): TableMetadata {
  return {
    "format-version": 2,
    "table-uuid": uuid,
    location,
    "last-sequence-number": 0,
    "last-updated-ms": now,
    "last-column-id": 0,
    schemas: [],
    "current-schema-id": 0,
    "partition-specs": [{ "spec-id": 0, fields: [] }],
    "default-spec-id": 0,
    // Partition field ids start at 1000; Iceberg's writers record 999 for an unpartitioned table.
    "last-partition-id": 999,
    properties: { "write.format.default": "parquet", "created-by": "edge-dedup" },
    "current-snapshot-id": -1,
    snapshots: [],
    "snapshot-log": [],
    "metadata-log": [],
    "sort-orders": [{ "order-id": 0, fields: [] }],
    "default-sort-order-id": 0,
    refs: {},
  };
}

export function currentSnapshot(table: TableMetadata): Snapshot | null {
  return table.snapshots.find((s) => s["snapshot-id"] === table["current-snapshot-id"]) ?? null;
}

export function currentSchema(table: TableMetadata): IcebergSchema | null {
  return table.schemas.find((s) => s["schema-id"] === table["current-schema-id"]) ?? null;
}

/** Where a snapshot records shard k's last commit (a stream with several shards: each appends its own commits, src/stream/shards.ts). */
export const commitSeqKey = (shard: number): string => (shard === 0 ? COMMIT_SEQ_KEY : `${COMMIT_SEQ_KEY}.shard-${shard}`);

/** The commit sequence of `shard` the current snapshot records; -1 before any. */
export function recordedCommitSeq(table: TableMetadata, shard = 0): number {
  const seq = currentSnapshot(table)?.summary[commitSeqKey(shard)];
  return seq === undefined ? -1 : Number(seq);
}

/** Every shard's recorded commit sequence of a snapshot: a new snapshot carries them all, and moves its own. */
export function commitSeqsOf(snapshot: Snapshot | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(snapshot?.summary ?? {})) if (k === COMMIT_SEQ_KEY || k.startsWith(`${COMMIT_SEQ_KEY}.shard-`)) out[k] = v;
  return out;
}

/**
 * The next version: `snapshot` becomes current on `main`, its schema current
 * (added to `schemas` if new), and the version it replaces enters the
 * metadata log. Snapshots replaced more than `retainMs` before it are expired
 * (dropped from the metadata), and of the rest only the last HISTORY_MAX are
 * kept, using at most SCHEMA_HISTORY_MAX schemas, and only the schemas they
 * use. Nothing is deleted here: the files of expired snapshots go later
 * (src/table/expiry.ts), once no reader of the last `retainMs` can use them.
 */
export function withSnapshot(
  table: TableMetadata,
  snapshot: Snapshot,
  schema: IcebergSchema,
  lastColumnId: number,
  previousMetadata: string | null,
  retainMs: number,
): TableMetadata {
  const snapshots = retainedSnapshots([...table.snapshots, snapshot], snapshot["timestamp-ms"] - retainMs);
  // The spec's rule: keep the schemas that the retained snapshots (and the table, as current) use.
  const used = new Set([schema["schema-id"], ...snapshots.map((s) => s["schema-id"])]);
  const known = table.schemas.some((s) => s["schema-id"] === schema["schema-id"]) ? table.schemas : [...table.schemas, schema];
  const schemas = known.filter((s) => used.has(s["schema-id"]));
  const kept = new Set(snapshots.map((s) => s["snapshot-id"]));
  const at = snapshot["timestamp-ms"];
  return {
    ...table,
    "last-sequence-number": snapshot["sequence-number"],
    "last-updated-ms": at,
    "last-column-id": lastColumnId,
    schemas,
    "current-schema-id": schema["schema-id"],
    "current-snapshot-id": snapshot["snapshot-id"],
    snapshots,
    "snapshot-log": [...table["snapshot-log"], { "timestamp-ms": at, "snapshot-id": snapshot["snapshot-id"] }].filter((e) => kept.has(e["snapshot-id"])),
    "metadata-log": previousMetadata
      ? [...table["metadata-log"], { "timestamp-ms": table["last-updated-ms"], "metadata-file": previousMetadata }].slice(-HISTORY_MAX)
      : table["metadata-log"],
    refs: { ...table.refs, main: { "snapshot-id": snapshot["snapshot-id"], type: "branch" } },
  };
}

/**
 * Of snapshots in commit order (the current last): those replaced at or after
 * `cutoff` (a snapshot is replaced when the next one commits), of those the
 * newest HISTORY_MAX, and of those only the ones whose schema is among the
 * SCHEMA_HISTORY_MAX newest used.
 */
function retainedSnapshots(all: readonly Snapshot[], cutoff: number): Snapshot[] {
  const young = all.findIndex((s, i) => i === all.length - 1 || all[i + 1]["timestamp-ms"] >= cutoff);
  const snapshots = all.slice(Math.max(young, all.length - HISTORY_MAX));
  const schemas = new Set<number>();
  for (let i = snapshots.length - 1; i >= 0; i--) {
    schemas.add(snapshots[i]["schema-id"]);
    if (schemas.size > SCHEMA_HISTORY_MAX) return snapshots.slice(i + 1);
  }
  return snapshots;
}

/** When each snapshot was replaced (the next one's time; the current one never was). */
export function replacedAt(snapshots: readonly Snapshot[], snapshotId: number): number | null {
  const i = snapshots.findIndex((s) => s["snapshot-id"] === snapshotId);
  return i >= 0 && i < snapshots.length - 1 ? snapshots[i + 1]["timestamp-ms"] : null;
}

/**
 * A fresh positive snapshot id, unused in this table, below 2^52: JSON
 * readers and JS Avro readers with double longs (avsc) read it exactly.
 */
export function newSnapshotId(table: TableMetadata): number {
  for (;;) {
    const [hi, lo] = crypto.getRandomValues(new Uint32Array(2));
    const id = (hi & 0xfffff) * 2 ** 32 + lo;
    if (id > 0 && !table.snapshots.some((s) => s["snapshot-id"] === id)) return id;
  }
}

/** Java's summary totals, carried from the parent and moved by this snapshot's changes. */
export function totals(parent: Snapshot | null, change: { records: number; files: number; bytes: number }): Record<string, string> {
  const total = (key: string, delta: number) => String(Number(parent?.summary[key] ?? 0) + delta);
  return {
    "total-records": total("total-records", change.records),
    "total-data-files": total("total-data-files", change.files),
    "total-files-size": total("total-files-size", change.bytes),
    "total-delete-files": "0",
    "total-position-deletes": "0",
    "total-equality-deletes": "0",
  };
}

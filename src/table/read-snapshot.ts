import { loadTable, metadataLocation } from "./commit";
import { keyOf } from "./layout";
import { currentSnapshot, type Snapshot, type TableMetadata } from "./metadata";
import { partitionLabel, specById, type PartitionSpec } from "./partitioning";
import { liveDataFiles } from "./snapshot-files";
import type { TableStore } from "./store";

/** A data file of the current snapshot, by its path inside the table (what GET …/table/file?path= takes), and its partition (null: unpartitioned). */
export interface TableFile {
  path: string;
  records: number;
  bytes: number;
  partition: string | null;
}

export interface CurrentTable {
  snapshot: Snapshot;
  metadataLocation: string;
  location: string;
  table: TableMetadata;
}

/** The table's current snapshot as Iceberg writes it, where its metadata is, and the table's location; null before the first commit. */
export async function readTableSnapshot(store: TableStore, stream: string): Promise<CurrentTable | null> {
  const loaded = await loadTable(store, stream);
  const snapshot = loaded && currentSnapshot(loaded.table);
  return loaded && snapshot
    ? { snapshot, metadataLocation: metadataLocation(loaded.table, loaded.version), location: loaded.table.location, table: loaded.table }
    : null;
}

/** The snapshot's data files (GET …/table: a reader with no Iceberg catalog, or no network, reads these Parquet files as they are). */
export async function tableFiles(store: TableStore, stream: string, current: CurrentTable): Promise<TableFile[]> {
  return (await liveDataFiles(store, stream, current.location, current.snapshot)).map((e) => {
    const spec = specById(current.table, e.specId);
    return {
      path: e.path.slice(current.location.length + 1),
      records: e.recordCount,
      bytes: e.sizeInBytes,
      partition: spec.fields.length === 0 ? null : partitionLabel(spec, e.partition),
    };
  });
}

/** How the table lays out its files: the spec new files get, and the current snapshot's files per partition (null: unpartitioned files). */
export function tableLayout(current: CurrentTable, files: readonly TableFile[] | null) {
  const spec: PartitionSpec = specById(current.table, current.table["default-spec-id"]);
  const partitions = new Map<string | null, { partition: string | null; files: number; records: number; bytes: number }>();
  for (const f of files ?? []) {
    const p = partitions.get(f.partition) ?? partitions.set(f.partition, { partition: f.partition, files: 0, records: 0, bytes: 0 }).get(f.partition)!;
    p.files++;
    p.records += f.records;
    p.bytes += f.bytes;
  }
  return {
    partitionSpec: spec,
    specs: current.table["partition-specs"].length,
    partitions: files === null ? null : [...partitions.values()].sort((a, b) => (a.partition ?? "").localeCompare(b.partition ?? "")),
  };
}

/** What the metadata retains: its snapshots, the oldest one's time. */
export function tableRetention(current: CurrentTable, retainMs: number) {
  const snapshots = current.table.snapshots;
  return { retainMs, snapshots: snapshots.length, oldestSnapshotAt: snapshots.length > 0 ? snapshots[0]["timestamp-ms"] : null };
}

/** A table file's path as GET …/table/file takes it: a data or metadata file's name, nothing above the table. */
export const TABLE_FILE_PATH = /^(data|metadata)\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** One file of the table by its path inside it (data/…, metadata/…); null when there is none. */
export async function readTableFile(store: TableStore, stream: string, path: string): Promise<Uint8Array | null> {
  if (!TABLE_FILE_PATH.test(path)) return null;
  return store.get(keyOf(stream, path));
}

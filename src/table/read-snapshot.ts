import { loadTable, metadataLocation } from "./commit";
import { keyOf } from "./layout";
import { currentSnapshot, type Snapshot } from "./metadata";
import { liveDataFiles } from "./snapshot-files";
import type { TableStore } from "./store";

/** A data file of the current snapshot, by its path inside the table (what GET …/table/file?path= takes). */
export interface TableFile {
  path: string;
  records: number;
  bytes: number;
}

/** The table's current snapshot as Iceberg writes it, where its metadata is, and the table's location; null before the first commit. */
export async function readTableSnapshot(store: TableStore, stream: string): Promise<{ snapshot: Snapshot; metadataLocation: string; location: string } | null> {
  const loaded = await loadTable(store, stream);
  const snapshot = loaded && currentSnapshot(loaded.table);
  return loaded && snapshot ? { snapshot, metadataLocation: metadataLocation(loaded.table, loaded.version), location: loaded.table.location } : null;
}

/** The snapshot's data files (GET …/table: a reader with no Iceberg catalog, or no network, reads these Parquet files as they are). */
export async function tableFiles(store: TableStore, stream: string, current: { snapshot: Snapshot; location: string }): Promise<TableFile[]> {
  return (await liveDataFiles(store, stream, current.location, current.snapshot)).map((e) => ({
    path: e.path.slice(current.location.length + 1),
    records: e.recordCount,
    bytes: e.sizeInBytes,
  }));
}

/** A table file's path as GET …/table/file takes it: a data or metadata file's name, nothing above the table. */
export const TABLE_FILE_PATH = /^(data|metadata)\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** One file of the table by its path inside it (data/…, metadata/…); null when there is none. */
export async function readTableFile(store: TableStore, stream: string, path: string): Promise<Uint8Array | null> {
  if (!TABLE_FILE_PATH.test(path)) return null;
  return store.get(keyOf(stream, path));
}

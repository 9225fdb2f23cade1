import { loadTable, metadataLocation } from "./commit";
import { currentSnapshot, type Snapshot } from "./metadata";
import type { TableStore } from "./store";

/** The table's current snapshot as Iceberg writes it, and where its metadata is (for GET …/table); null before the first commit. */
export async function readTableSnapshot(store: TableStore, stream: string): Promise<{ snapshot: Snapshot; metadataLocation: string } | null> {
  const loaded = await loadTable(store, stream);
  const snapshot = loaded && currentSnapshot(loaded.table);
  return loaded && snapshot ? { snapshot, metadataLocation: metadataLocation(loaded.table, loaded.version) } : null;
}

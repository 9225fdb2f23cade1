import { commitVersion, metadataLocation, type LoadedTable } from "./commit";
import { keyOf, manifestListPath, manifestPath, uriOf } from "./layout";
import { encodeManifest, encodeManifestList, manifestFileOf, type DataFileEntry, type ManifestFile } from "./manifest";
import { currentSnapshot, withSnapshot, type Snapshot, type TableMetadata } from "./metadata";
import type { TableStore } from "./store";
import type { IcebergSchema } from "./table-schema";

export interface NewSnapshot {
  /** the table as read (null: a new table) and the metadata it becomes */
  loaded: LoadedTable | null;
  table: TableMetadata;
  schema: IcebergSchema;
  lastColumnId: number;
  snapshotId: number;
  sequenceNumber: number;
  now: number;
  /** the parent's manifests this snapshot keeps as they are */
  carried: readonly ManifestFile[];
  /** the manifests this snapshot writes, one per group of entries */
  written: readonly (readonly DataFileEntry[])[];
  summary: Snapshot["summary"];
}

/**
 * Writes a snapshot's manifests and manifest list (create-only, under a fresh
 * commit id, so a failed attempt only leaves unreferenced files), then
 * commits the next metadata version. Null when another writer committed that
 * version first.
 */
export async function commitSnapshot(store: TableStore, stream: string, s: NewSnapshot): Promise<{ metadataLocation: string } | null> {
  const { table, snapshotId, sequenceNumber } = s;
  const commitId = crypto.randomUUID();
  const written = await Promise.all(
    s.written.map(async (entries, n) => {
      const bytes = encodeManifest(s.schema, entries);
      await store.put(keyOf(stream, manifestPath(commitId, n)), bytes, { createOnly: true });
      return manifestFileOf(uriOf(table.location, manifestPath(commitId, n)), bytes.length, snapshotId, sequenceNumber, entries);
    }),
  );
  const parentId = currentSnapshot(table)?.["snapshot-id"] ?? null;
  const listPath = manifestListPath(snapshotId, commitId);
  // Earlier manifests first, so a reader that follows the list reads older rows first.
  const list = encodeManifestList({ snapshotId, parentSnapshotId: parentId, sequenceNumber }, [...s.carried, ...written]);
  await store.put(keyOf(stream, listPath), list, { createOnly: true });
  const snapshot: Snapshot = {
    "snapshot-id": snapshotId,
    ...(parentId === null ? {} : { "parent-snapshot-id": parentId }),
    "sequence-number": sequenceNumber,
    // Iceberg's Java reader refuses a version whose time is well before the previous one's: never go back.
    "timestamp-ms": Math.max(s.now, table["last-updated-ms"]),
    "manifest-list": uriOf(table.location, listPath),
    summary: s.summary,
    "schema-id": s.schema["schema-id"],
  };
  const previous = s.loaded ? metadataLocation(s.loaded.table, s.loaded.version) : null;
  const next = withSnapshot(table, snapshot, s.schema, s.lastColumnId, previous);
  const version = (s.loaded?.version ?? 0) + 1;
  return (await commitVersion(store, stream, version, next)) ? { metadataLocation: metadataLocation(next, version) } : null;
}

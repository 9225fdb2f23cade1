import { commitVersion, metadataLocation, type LoadedTable } from "./commit";
import { keyOf, manifestListPath, manifestPath, uriOf } from "./layout";
import { encodeManifest, encodeManifestList, manifestFileOf, type DataFileEntry, type ManifestFile } from "./manifest";
import { writeJournal } from "./expiry";
import { currentSnapshot, replacedAt, withSnapshot, type Snapshot, type TableMetadata } from "./metadata";
import { specById } from "./partitioning";
import type { TableStore } from "./store";
import type { IcebergSchema } from "./table-schema";

/** A won commit: where its metadata is, and when the files of the snapshots it expired may be swept (absent: it expired none). */
export interface Committed {
  metadataLocation: string;
  sweepAt?: number;
}

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
  /** the manifests this snapshot writes, one per group of entries (each group of one partition spec) */
  written: readonly (readonly DataFileEntry[])[];
  summary: Snapshot["summary"];
  /** how long a replaced snapshot stays readable (the stream's table.retain) */
  retainMs: number;
}

/**
 * Writes a snapshot's manifests and manifest list (create-only, under a fresh
 * commit id, so a failed attempt only leaves unreferenced files), the journal
 * of the snapshots the new version expires (src/table/expiry.ts), then
 * commits the next metadata version. Null when another writer committed that
 * version first.
 */
export async function commitSnapshot(store: TableStore, stream: string, s: NewSnapshot): Promise<Committed | null> {
  const { table, snapshotId, sequenceNumber } = s;
  const commitId = crypto.randomUUID();
  const written = await Promise.all(
    s.written.map(async (entries, n) => {
      const spec = specById(table, entries[0]?.specId ?? table["default-spec-id"]);
      const bytes = encodeManifest(s.schema, spec, entries);
      await store.put(keyOf(stream, manifestPath(commitId, n)), bytes, { createOnly: true });
      return manifestFileOf(uriOf(table.location, manifestPath(commitId, n)), bytes.length, snapshotId, sequenceNumber, spec, entries);
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
  const next = withSnapshot(table, snapshot, s.schema, s.lastColumnId, previous, s.retainMs);
  const kept = new Set(next.snapshots.map((x) => x["snapshot-id"]));
  const dropped = table.snapshots.filter((x) => !kept.has(x["snapshot-id"]));
  const sweepAt = dropped.length > 0 ? replacedAt([...table.snapshots, snapshot], dropped[dropped.length - 1]["snapshot-id"])! + s.retainMs : null;
  if (sweepAt !== null) await writeJournal(store, stream, commitId, sweepAt, dropped);
  const version = (s.loaded?.version ?? 0) + 1;
  if (!(await commitVersion(store, stream, version, next))) return null;
  return { metadataLocation: metadataLocation(next, version), ...(sweepAt === null ? {} : { sweepAt }) };
}

import { loadTable, MAX_COMMIT_ATTEMPTS } from "./commit";
import { dataPath, digestOf, keyOf, uriOf } from "./layout";
import { STATUS, type DataFileEntry } from "./manifest";
import { commitSeqsOf, currentSchema, currentSnapshot, newSnapshotId, totals } from "./metadata";
import { columnMetrics } from "./column-metrics";
import { dataFileFieldIds, decodeDataFile, encodeDataFile } from "./parquet";
import { commitSnapshot } from "./snapshot-commit";
import { liveDataFiles, readDataFileBytes } from "./snapshot-files";
import type { TableStore } from "./store";

export interface CompactOptions {
  /** compact only when at least this many data files are small */
  minFiles: number;
  /** a data file smaller than this is small */
  targetBytes: number;
  now: number;
}

export interface CompactResult {
  compacted: boolean;
  /** how many data files were replaced by one */
  filesRewritten: number;
  snapshotId: number | null;
  sequenceNumber: number;
  metadataLocation: string | null;
}

/**
 * Rewrites the current snapshot's small data files into one, as a `replace`
 * snapshot: one manifest with the new file (added) and the files it keeps
 * (existing), one with the replaced files (deleted, which a later append
 * drops). Rows are read by field id into the current schema and written in
 * the order of the files' sequence numbers; the row count is checked before
 * committing. The commit sequence the table records is carried over, so
 * compaction never changes which appends are skipped. A lost commit race
 * plans again on the new version. The replaced files stay in the bucket
 * (older snapshots reference them) until snapshots are expired.
 */
export async function compactTable(store: TableStore, stream: string, options: CompactOptions): Promise<CompactResult> {
  for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
    const loaded = await loadTable(store, stream);
    const parent = loaded && currentSnapshot(loaded.table);
    const schema = loaded && currentSchema(loaded.table);
    if (!loaded || !parent || !schema) return { compacted: false, filesRewritten: 0, snapshotId: null, sequenceNumber: 0, metadataLocation: null };
    const { table } = loaded;
    const live = await liveDataFiles(store, stream, table.location, parent);
    const small = live.filter((e) => e.sizeInBytes < options.targetBytes).sort((a, b) => a.sequenceNumber - b.sequenceNumber);
    if (small.length < Math.max(2, options.minFiles)) {
      return { compacted: false, filesRewritten: 0, snapshotId: parent["snapshot-id"], sequenceNumber: parent["sequence-number"], metadataLocation: null };
    }
    const files = await Promise.all(small.map((e) => readDataFileBytes(store, stream, table.location, e)));
    const rows = (await Promise.all(files.map((bytes) => decodeDataFile(schema, bytes)))).flat();
    // The new file carries the columns its inputs did (and any a row has a value in), so it is no wider than they were.
    const carried = new Set(files.flatMap((bytes) => [...dataFileFieldIds(bytes)]));
    const removedRecords = small.reduce((n, e) => n + e.recordCount, 0);
    if (rows.length !== removedRecords) throw new Error(`table ${stream}: read ${rows.length} rows from files that hold ${removedRecords}`);
    const data = encodeDataFile(schema, rows, (f) => carried.has(f.id));
    const sequenceNumber = table["last-sequence-number"] + 1;
    const dataFile = dataPath("compact", sequenceNumber, await digestOf(data));
    await store.put(keyOf(stream, dataFile), data, { createOnly: true });

    const snapshotId = newSnapshotId(table);
    const replaced = new Set(small.map((e) => e.path));
    const added: DataFileEntry = {
      status: STATUS.added,
      snapshotId,
      sequenceNumber,
      fileSequenceNumber: sequenceNumber,
      path: uriOf(table.location, dataFile),
      recordCount: rows.length,
      sizeInBytes: data.length,
      metrics: columnMetrics(schema, rows, dataFileFieldIds(data)),
    };
    const kept = live.filter((e) => !replaced.has(e.path)).map((e) => ({ ...e, status: STATUS.existing }));
    const deleted = small.map((e) => ({ ...e, status: STATUS.deleted, snapshotId }));
    const removedBytes = small.reduce((n, e) => n + e.sizeInBytes, 0);
    const committed = await commitSnapshot(store, stream, {
      loaded,
      table,
      schema,
      lastColumnId: table["last-column-id"],
      snapshotId,
      sequenceNumber,
      now: options.now,
      carried: [],
      written: [[added, ...kept], deleted],
      summary: {
        operation: "replace",
        "added-data-files": "1",
        "deleted-data-files": String(small.length),
        "added-records": String(rows.length),
        "deleted-records": String(removedRecords),
        "added-files-size": String(data.length),
        "removed-files-size": String(removedBytes),
        "changed-partition-count": "1",
        ...totals(parent, { records: 0, files: 1 - small.length, bytes: data.length - removedBytes }),
        ...commitSeqsOf(parent),
      },
    });
    if (committed) return { compacted: true, filesRewritten: small.length, snapshotId, sequenceNumber, ...committed };
  }
  throw new Error(`table ${stream}: lost the metadata commit race ${MAX_COMMIT_ATTEMPTS} times`);
}

import { loadTable, MAX_COMMIT_ATTEMPTS } from "./commit";
import { STATUS, type DataFileEntry } from "./manifest";
import { commitSeqsOf, currentSchema, currentSnapshot, newSnapshotId, totals } from "./metadata";
import { partitionKey } from "./partitioning";
import { DEFAULT_RETAIN_MS } from "../stream/table-options";
import { writeDataFile } from "./data-file";
import { dataFileFieldIds, decodeDataFile } from "./parquet";
import { commitSnapshot } from "./snapshot-commit";
import { liveDataFiles, readDataFileBytes } from "./snapshot-files";
import type { TableStore } from "./store";

export interface CompactOptions {
  /** compact only when at least this many data files are small */
  minFiles: number;
  /** a data file smaller than this is small */
  targetBytes: number;
  now: number;
  /** how long a replaced snapshot stays readable (absent: DEFAULT_RETAIN_MS) */
  retainMs?: number;
}

export interface CompactResult {
  compacted: boolean;
  /** how many data files were replaced by one */
  filesRewritten: number;
  snapshotId: number | null;
  sequenceNumber: number;
  metadataLocation: string | null;
  /** when the files of the snapshots this commit expired may be swept (absent: it expired none) */
  sweepAt?: number;
}

/**
 * Rewrites each partition's small data files into one, as a `replace`
 * snapshot: manifests with the new files (added) and the files it keeps
 * (existing), and manifests with the replaced files (deleted, which a later
 * append drops), one of each per partition spec. Only files of the table's
 * current spec are rewritten, a partition at a time, so compaction never
 * mixes partitions and leaves the files of older specs as they were. Rows
 * are read by field id into the current schema and written in the order of
 * the files' sequence numbers; the row count is checked before committing.
 * The commit sequence the table records is carried over, so compaction never
 * changes which appends are skipped. A lost commit race plans again on the
 * new version. The replaced files stay in the bucket while a snapshot that
 * uses them is retained (src/table/expiry.ts).
 */
export async function compactTable(store: TableStore, stream: string, options: CompactOptions): Promise<CompactResult> {
  for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
    const loaded = await loadTable(store, stream);
    const parent = loaded && currentSnapshot(loaded.table);
    const schema = loaded && currentSchema(loaded.table);
    if (!loaded || !parent || !schema) return { compacted: false, filesRewritten: 0, snapshotId: null, sequenceNumber: 0, metadataLocation: null };
    const { table } = loaded;
    const live = await liveDataFiles(store, stream, table.location, parent);
    const partitions = new Map<string, DataFileEntry[]>();
    for (const e of live) {
      if (e.specId !== table["default-spec-id"] || e.sizeInBytes >= options.targetBytes) continue;
      const key = partitionKey(e.specId, e.partition);
      const group = partitions.get(key);
      if (group) group.push(e);
      else partitions.set(key, [e]);
    }
    const groups = [...partitions.values()]
      .filter((g) => g.length >= Math.max(2, options.minFiles))
      .map((g) => g.sort((a, b) => a.sequenceNumber - b.sequenceNumber));
    if (groups.length === 0) {
      return { compacted: false, filesRewritten: 0, snapshotId: parent["snapshot-id"], sequenceNumber: parent["sequence-number"], metadataLocation: null };
    }
    const snapshotId = newSnapshotId(table);
    const sequenceNumber = table["last-sequence-number"] + 1;
    const added: DataFileEntry[] = [];
    for (const small of groups) {
      const files = await Promise.all(small.map((e) => readDataFileBytes(store, stream, table.location, e)));
      const rows = (await Promise.all(files.map((bytes) => decodeDataFile(schema, bytes)))).flat();
      // The new file carries the columns its inputs did (and any a row has a value in), so it is no wider than they were.
      const carried = new Set(files.flatMap((bytes) => [...dataFileFieldIds(bytes)]));
      const removedRecords = small.reduce((n, e) => n + e.recordCount, 0);
      if (rows.length !== removedRecords) throw new Error(`table ${stream}: read ${rows.length} rows from files that hold ${removedRecords}`);
      const { specId, partition } = small[0];
      added.push(
        await writeDataFile(store, stream, table.location, {
          kind: "compact",
          seq: sequenceNumber,
          schema,
          rows,
          always: (f) => carried.has(f.id),
          snapshotId,
          sequenceNumber,
          specId,
          partition,
        }),
      );
    }
    const small = groups.flat();
    const replaced = new Set(small.map((e) => e.path));
    const kept = live.filter((e) => !replaced.has(e.path)).map((e) => ({ ...e, status: STATUS.existing }));
    const deleted = small.map((e) => ({ ...e, status: STATUS.deleted, snapshotId }));
    const removedRecords = small.reduce((n, e) => n + e.recordCount, 0);
    const addedBytes = added.reduce((n, e) => n + e.sizeInBytes, 0);
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
      written: [...bySpec([...added, ...kept]), ...bySpec(deleted)],
      summary: {
        operation: "replace",
        "added-data-files": String(added.length),
        "deleted-data-files": String(small.length),
        "added-records": String(removedRecords),
        "deleted-records": String(removedRecords),
        "added-files-size": String(addedBytes),
        "removed-files-size": String(removedBytes),
        "changed-partition-count": String(groups.length),
        ...totals(parent, { records: 0, files: added.length - small.length, bytes: addedBytes - removedBytes }),
        ...commitSeqsOf(parent),
      },
      retainMs: options.retainMs ?? DEFAULT_RETAIN_MS,
    });
    if (committed) return { compacted: true, filesRewritten: small.length, snapshotId, sequenceNumber, ...committed };
  }
  throw new Error(`table ${stream}: lost the metadata commit race ${MAX_COMMIT_ATTEMPTS} times`);
}

/** Entries grouped by partition spec (a manifest holds one spec's files), in the order each spec first appears. */
function bySpec(entries: readonly DataFileEntry[]): DataFileEntry[][] {
  const out = new Map<number, DataFileEntry[]>();
  for (const e of entries) {
    const group = out.get(e.specId);
    if (group) group.push(e);
    else out.set(e.specId, [e]);
  }
  return [...out.values()];
}

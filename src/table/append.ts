import type { ColumnType } from "../stream/config";
import { own } from "../lib/own";
import { shardOfSeq } from "../stream/shards";
import { loadTable, MAX_COMMIT_ATTEMPTS, metadataLocation } from "./commit";
import { dataPath, DEFAULT_BASE_URI, digestOf, keyOf, tableLocation, uriOf } from "./layout";
import { STATUS, type DataFileEntry } from "./manifest";
import {
  commitSeqKey,
  commitSeqsOf,
  currentSchema,
  DROPPED_FIELDS_KEY,
  currentSnapshot,
  emptyTable,
  newSnapshotId,
  recordedCommitSeq,
  totals,
} from "./metadata";
import { columnMetrics } from "./column-metrics";
import { dataFileFieldIds, encodeDataFile } from "./parquet";
import { commitSnapshot } from "./snapshot-commit";
import { hasLiveFiles, manifestsOf } from "./snapshot-files";
import type { TableStore } from "./store";
import { evolveSchema } from "./table-schema";
import { toTableValue } from "./values";

export interface AppendInput {
  stream: string;
  /** the stream's declared columns (StreamConfig.schema); columns only seen in rows become strings */
  schema: Readonly<Record<string, ColumnType>>;
  rows: readonly Record<string, unknown>[];
  /** the Coordinator's commit sequence of these rows: increasing, and the same on every retry */
  commitSeq: number;
  now: number;
  /** where the table says it lives, for a new table (an existing one keeps its `location`) */
  baseUri?: string;
  /** the most columns the table may have (the stream's `table.maxColumns`); fields past it are left out (evolveSchema) */
  maxColumns?: number;
}

export interface CommitResult {
  snapshotId: number | null;
  sequenceNumber: number;
  /** true when nothing was written: the commit sequence is already in the table, or there were no rows */
  skipped: boolean;
  metadataLocation: string | null;
  /** fields of these rows the table left out (names that cannot be columns, or past maxColumns); absent when none */
  droppedFields?: string[];
  /** the table's column names (absent before its first snapshot) */
  columns?: string[];
}

/**
 * Appends one commit's rows as one snapshot, exactly once: a commit sequence
 * at or below the one the current snapshot records is skipped. The writes, in
 * order, and what a crash after each leaves behind:
 *  1. the data file (named by commit sequence and digest): an unreferenced file
 *     that a retry of the same rows writes again to the same key;
 *  2. the manifest, 3. the manifest list: unreferenced files (orphans; no
 *     reader follows them, nothing cleans them up yet);
 *  4. `v{N+1}.metadata.json`, create-only: the commit point. After it the rows
 *     are in the table and a retry is skipped;
 *  5. `version-hint.text`: until it is written, hint-following readers see
 *     version N; our reader probes past the hint.
 * Losing step 4 to another writer re-reads the table and starts over (which
 * skips if the winner committed this sequence).
 */
export async function appendToTable(store: TableStore, input: AppendInput): Promise<CommitResult> {
  const { stream, rows, commitSeq, now } = input;
  for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
    const loaded = await loadTable(store, stream);
    const table = loaded?.table ?? emptyTable(tableLocation(input.baseUri ?? DEFAULT_BASE_URI, stream), crypto.randomUUID(), now);
    const parent = currentSnapshot(table);
    // Each shard's commits are skipped by its own record (a stream with one shard: the one record, as always).
    if (rows.length === 0 || commitSeq <= recordedCommitSeq(table, shardOfSeq(commitSeq))) {
      const current = currentSchema(table);
      return {
        ...(current ? { columns: current.fields.map((f) => f.name) } : {}),
        snapshotId: parent?.["snapshot-id"] ?? null,
        sequenceNumber: table["last-sequence-number"],
        skipped: true,
        metadataLocation: loaded ? metadataLocation(loaded.table, loaded.version) : null,
      };
    }
    const location = table.location;
    const { schema, lastColumnId, dropped } = evolveSchema(currentSchema(table), table["last-column-id"], input.schema, rows, input.maxColumns);
    const values = rows.map((row) => schema.fields.map((f) => toTableValue(f.name, f.type, own(input.schema, f.name), own(row, f.name))));
    // The declared (typed) columns always, others only where a row has a value.
    const data = encodeDataFile(schema, values, (f) => own(input.schema, f.name) !== undefined);
    const dataFile = dataPath("append", commitSeq, await digestOf(data));
    // Already there means a retry wrote these very bytes: the digest is in the name.
    await store.put(keyOf(stream, dataFile), data, { createOnly: true });

    const snapshotId = newSnapshotId(table);
    const sequenceNumber = table["last-sequence-number"] + 1;
    const entry: DataFileEntry = {
      status: STATUS.added,
      snapshotId,
      sequenceNumber,
      fileSequenceNumber: sequenceNumber,
      path: uriOf(location, dataFile),
      recordCount: rows.length,
      sizeInBytes: data.length,
      metrics: columnMetrics(schema, values, dataFileFieldIds(data)),
    };
    const committed = await commitSnapshot(store, stream, {
      loaded,
      table,
      schema,
      lastColumnId,
      snapshotId,
      sequenceNumber,
      now,
      carried: parent ? (await manifestsOf(store, stream, location, parent)).filter(hasLiveFiles) : [],
      written: [[entry]],
      summary: {
        operation: "append",
        "added-data-files": "1",
        "added-records": String(rows.length),
        "added-files-size": String(data.length),
        "changed-partition-count": "1",
        ...totals(parent, { records: rows.length, files: 1, bytes: data.length }),
        ...commitSeqsOf(parent),
        [commitSeqKey(shardOfSeq(commitSeq))]: String(commitSeq),
        ...(dropped.length > 0 ? { [DROPPED_FIELDS_KEY]: String(dropped.length) } : {}),
      },
    });
    if (committed) {
      return {
        snapshotId,
        sequenceNumber,
        skipped: false,
        ...committed,
        ...(dropped.length > 0 ? { droppedFields: dropped } : {}),
        columns: schema.fields.map((f) => f.name),
      };
    }
  }
  throw new Error(`table ${input.stream}: lost the metadata commit race ${MAX_COMMIT_ATTEMPTS} times`);
}

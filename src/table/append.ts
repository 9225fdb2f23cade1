import type { ColumnType } from "../stream/config";
import { own } from "../lib/own";
import { shardOfSeq } from "../stream/shards";
import { loadTable, MAX_COMMIT_ATTEMPTS, metadataLocation } from "./commit";
import { DEFAULT_BASE_URI, tableLocation } from "./layout";
import type { DataFileEntry } from "./manifest";
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
import { writeDataFile } from "./data-file";
import { DEFAULT_RETAIN_MS } from "../stream/table-options";
import { evolveSpec, partitionKey, partitionOf, specById, wantedFields, type PartitionBy, type PartitionValues } from "./partitioning";
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
  /** how new data files are partitioned (src/table/partitioning.ts; absent: none), by the event-time column */
  partitionBy?: PartitionBy;
  eventTime?: string | null;
  /** how long a replaced snapshot stays readable (absent: DEFAULT_RETAIN_MS) */
  retainMs?: number;
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
  /** when the files of the snapshots this commit expired may be swept (absent: it expired none) */
  sweepAt?: number;
}

/**
 * Appends one commit's rows as one snapshot, exactly once: a commit sequence
 * at or below the one the current snapshot records is skipped. The rows go
 * into one data file per partition of the table's spec (which first becomes
 * `partitionBy`'s, if it differs: spec evolution). The writes, in
 * order, and what a crash after each leaves behind:
 *  1. the data files (named by commit sequence and digest): unreferenced files
 *     that a retry of the same rows writes again to the same keys;
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
    // A partitioned table's event-time column is a timestamp (the instant the stream reads), declared or not.
    const by = input.partitionBy ?? "none";
    const eventTime = input.eventTime ?? null;
    const declared =
      by !== "none" && eventTime !== null && own(input.schema, eventTime) === undefined ? { ...input.schema, [eventTime]: "timestamp" as const } : input.schema;
    const { schema, lastColumnId, dropped } = evolveSchema(currentSchema(table), table["last-column-id"], declared, rows, input.maxColumns);
    const specs = evolveSpec(table, wantedFields(schema, by, eventTime), loaded === null);
    const spec = specById(specs, specs["default-spec-id"]);
    const values = rows.map((row) => schema.fields.map((f) => toTableValue(f.name, f.type, own(declared, f.name), own(row, f.name))));
    const groups = new Map<string, { partition: PartitionValues; rows: typeof values }>();
    for (const row of values) {
      const partition = partitionOf(spec, schema, row);
      const key = partitionKey(spec["spec-id"], partition);
      const group = groups.get(key) ?? groups.set(key, { partition, rows: [] }).get(key)!;
      group.rows.push(row);
    }
    const snapshotId = newSnapshotId(table);
    const sequenceNumber = table["last-sequence-number"] + 1;
    const entries: DataFileEntry[] = [];
    // In the order of the partitions' first rows: the same rows make the same files on every retry.
    for (const group of groups.values()) {
      // The declared (typed) columns always, others only where a row has a value.
      const always = (f: { name: string }) => own(declared, f.name) !== undefined;
      const { rows: partRows, partition } = group;
      entries.push(
        await writeDataFile(store, stream, location, {
          kind: "append",
          seq: commitSeq,
          schema,
          rows: partRows,
          always,
          snapshotId,
          sequenceNumber,
          specId: spec["spec-id"],
          partition,
        }),
      );
    }
    const bytes = entries.reduce((n, e) => n + e.sizeInBytes, 0);
    const committed = await commitSnapshot(store, stream, {
      loaded,
      table: { ...table, ...specs },
      schema,
      lastColumnId,
      snapshotId,
      sequenceNumber,
      now,
      carried: parent ? (await manifestsOf(store, stream, location, parent)).filter(hasLiveFiles) : [],
      written: [entries],
      summary: {
        operation: "append",
        "added-data-files": String(entries.length),
        "added-records": String(rows.length),
        "added-files-size": String(bytes),
        "changed-partition-count": String(entries.length),
        ...totals(parent, { records: rows.length, files: entries.length, bytes }),
        ...commitSeqsOf(parent),
        [commitSeqKey(shardOfSeq(commitSeq))]: String(commitSeq),
        ...(dropped.length > 0 ? { [DROPPED_FIELDS_KEY]: String(dropped.length) } : {}),
      },
      retainMs: input.retainMs ?? DEFAULT_RETAIN_MS,
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

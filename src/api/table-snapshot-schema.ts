import { z } from "zod";
import { PUBLISH_RETRY_BASE_MS, PUBLISH_RETRY_MAX_MS } from "../output/publish-guard";
import { formatInterval } from "../stream/interval";
import { PARTITION_BY } from "../stream/table-options";

/** GET …/table: the current snapshot as Iceberg writes it, its files, how they are partitioned and how long replaced snapshots stay. */
export const tableSnapshotSchema = z.object({
  stream: z.string(),
  metadataLocation: z.string(),
  snapshot: z
    .looseObject({
      "snapshot-id": z.number(),
      "parent-snapshot-id": z.number().optional(),
      "sequence-number": z.number(),
      "timestamp-ms": z.number(),
      "manifest-list": z.string(),
      summary: z.object({ operation: z.enum(["append", "replace"]) }).catchall(z.string()),
      "schema-id": z.number(),
    })
    .describe("the current snapshot, as Iceberg writes it"),
  files: z
    .array(
      z.object({
        path: z.string(),
        records: z.number().int(),
        bytes: z.number().int(),
        partition: z.string().nullable().describe('its partition as Iceberg names it, e.g. "ts_day=2026-12-07" (null: written unpartitioned)'),
      }),
    )
    .nullable()
    .describe("the snapshot's data files (Parquet), each by GET …/table/file?path=; null while its manifests cannot be read (publishing says why)"),
  partitionBy: z.enum(PARTITION_BY).describe("how the stream asks for new files to be partitioned (table.partitionBy)"),
  partitionSpec: z
    .object({
      "spec-id": z.number().int(),
      fields: z.array(z.object({ "source-id": z.number().int(), "field-id": z.number().int(), name: z.string(), transform: z.enum(["day", "hour"]) })),
    })
    .describe("the partition spec new files get, as Iceberg writes it (fields [] : unpartitioned)"),
  partitionNote: z
    .string()
    .optional()
    .describe("why new files are not partitioned as partitionBy asks (e.g. an older table's event-time column is not a timestamp)"),
  specs: z.number().int().describe("partition specs the table has had (older files keep theirs)"),
  partitions: z
    .array(z.object({ partition: z.string().nullable(), files: z.number().int(), records: z.number().int(), bytes: z.number().int() }))
    .nullable()
    .describe("the current snapshot's files per partition (null: unpartitioned files; the whole list null when files is)"),
  retention: z
    .object({
      retainMs: z.number().int().describe("a replaced snapshot stays readable this long, then its files are deleted (table.retain)"),
      snapshots: z.number().int().describe("snapshots the metadata holds (at most 100, and none replaced more than retainMs ago)"),
      oldestSnapshotAt: z.number().nullable().describe("ms"),
    })
    .describe("snapshot expiry"),
  publishing: z
    .object({
      publishedSeq: z.number().int().describe("the last commit sequence in the table"),
      committedSeq: z.number().int().describe("the last commit sequence of the stream"),
      failing: z
        .boolean()
        .describe(
          `the last attempt to append failed; it is retried with backoff (${formatInterval(PUBLISH_RETRY_BASE_MS)} doubling, at most ${formatInterval(PUBLISH_RETRY_MAX_MS)})`,
        ),
      failures: z.number().int().describe("failed attempts in a row"),
      lastError: z.string().nullable(),
      lastErrorAt: z.number().nullable(),
      nextAttemptAt: z.number().nullable(),
    })
    .optional()
    .describe("how far appending committed output to the table has got"),
});

export type TableSnapshot = z.infer<typeof tableSnapshotSchema>;

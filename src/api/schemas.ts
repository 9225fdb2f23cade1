import { z } from "zod";
import { HEALTH_REASON_CODES } from "../stream/health";
import { partitionCapacitySchema, stateTotals } from "./partition-figures-schema";
import { MAX_REJECTED_LISTED } from "../stream/batch-outcome";

/**
 * The JSON bodies the service answers, one zod schema each: the routes
 * declare them as their responses (src/api/routes), the OpenAPI document
 * publishes them (./openapi.ts), the typed client (src/client) takes its
 * types from them (z.infer, no interfaces of its own), and test/integration/api/openapi.test.ts parses real
 * responses with every one, so none can drift from what the routes send.
 * Zod only: the client imports this file's types, in Node and in workerd.
 * Open-ended parts (a stream's config, an Iceberg snapshot) are loose objects:
 * the listed fields are checked, others pass.
 */
/** RFC 9457; extension members (errors, …) pass. */
export const problemSchema = z.looseObject({
  type: z.string().describe("https://edge-dedup.dev/problems/<slug>: see docs/reference/errors.md#<slug>"),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().optional(),
  errors: z.array(z.record(z.string(), z.unknown())).optional(),
});

export const outcomeSchema = z.object({
  batchId: z.string(),
  source: z.string(),
  replayed: z.boolean().describe("true when this batch id had already committed, so nothing was done"),
  watermark: z.number().describe("the global watermark this batch was judged by, from before the batch (epoch ms)"),
  watermarkAfter: z.number().describe("the global watermark after its commit"),
  input: z.number().int().describe("rows in the body"),
  emitted: z.number().int().describe("rows written to the output"),
  duplicates: z.number().int().describe("rows dropped as copies of a remembered key, or of an earlier row in the batch"),
  late: z.number().int().describe("rows dropped because their event time <= the watermark"),
  conflicts: z
    .number()
    .int()
    .optional()
    .describe(
      "copies of a remembered id whose content (minus volatile fields) differs from the kept copy's: counted in duplicates too (onConflict drop) or in rejected (reject)",
    ),
  rejected: z
    .array(z.object({ index: z.number().int().describe("zero-based position in the batch"), error: z.string() }))
    .describe("rows that failed validation; at most the first 100"),
  rejectedCount: z.number().int().optional().describe(`present when more than ${MAX_REJECTED_LISTED} rows were rejected: how many`),
});

export const progressReportSchema = z.object({
  batchId: z.string(),
  source: z.string(),
  commitSeq: z.number().int(),
  committedAt: z.number(),
  durationMs: z.number(),
  input: z.number().int(),
  emitted: z.number().int(),
  duplicates: z.number().int(),
  late: z.number().int(),
  conflicts: z.number().int().optional().describe("of the duplicates or rejected: copies whose content differed from the kept copy's"),
  rejected: z.number().int(),
  watermark: z.number(),
  watermarkAfter: z.number(),
  numRowsTotal: z.number().int(),
  numRowsUpdated: z.number().int(),
  numRowsRemoved: z.number().int(),
  stateBytes: z.number().int(),
});

export const progressSchema = z.object({ progress: z.array(progressReportSchema) });

/** A stream's config as the service keeps it (intervals in ms, defaults filled in); StreamConfig in src/stream/config.ts. */
export const streamConfigSchema = z.looseObject({
  key: z.array(z.string()),
  eventTime: z.string().nullable(),
  mode: z.enum(["within-watermark", "event-time-key", "global"]),
  watermarkDelay: z.number().describe("ms"),
  partitions: z.number().int(),
  shards: z.number().int().optional().describe("every ingest shard the stream has (absent: 1); each keeps its output"),
  intakeShards: z
    .number()
    .int()
    .optional()
    .describe(
      'after a PATCH to fewer shards: shards 0 … intakeShards − 1 take new batches, the others keep their output and take none (set by PATCH {"shards"} only; leave it out of a PUT)',
    ),
  watermarkPolicy: z.enum(["min", "max"]),
  schema: z.record(z.string(), z.string()),
  sources: z.record(z.string(), z.looseObject({ watermarkDelay: z.number().optional(), disabled: z.boolean().optional() })),
  maxEventTimeSkew: z.number().describe("ms"),
  maxAheadOfWatermark: z.number().optional(),
  idleTimeout: z.number().optional(),
  limits: z.object({ maxBodyBytes: z.number().int(), maxRows: z.number().int() }),
  table: z.looseObject({ format: z.literal("iceberg"), location: z.string().optional() }).optional(),
  stateKeys: z.literal("hashed").optional().describe("present when partitions keep 64-bit key hashes"),
  contentKey: z
    .object({ exclude: z.array(z.string()) })
    .optional()
    .describe('present for "key": {"content": …}; key is then []'),
  volatile: z.array(z.string()).optional(),
  onConflict: z.literal("reject").optional().describe("absent: drop"),
  keepDuplicates: z.literal(true).optional(),
  idempotencyWindow: z.number().optional().describe("ms; absent: 24 hours"),
});

export const putStreamResultSchema = z.object({
  stream: z.string(),
  status: z.enum(["created", "updated", "unchanged"]),
  config: streamConfigSchema,
});

export const sourceInfoSchema = z.object({
  maxEventTime: z.number().nullable(),
  watermark: z.number(),
  lastBatchAt: z.number().nullable(),
  declared: z.boolean(),
  idle: z.boolean(),
});

/** A provider webhook source's counts (src/webhooks/tally.ts). */
const webhookCountsSchema = z
  .record(z.string(), z.object({ replayed: z.number().int(), refused: z.record(z.string(), z.number().int()), rows: z.number().int() }))
  .describe(
    "per provider webhook source: redeliveries answered as replays, deliveries refused by their signature (by reason: malformed, stale, wrong-provider, bad-signature), and its committed rows",
  );

export const rescaleSchema = z
  .object({
    from: z.number().int().describe("partitions before"),
    to: z.number().int().describe("partitions after"),
    state: z
      .enum(["moving"])
      .describe("moving: the new partitions judge every key; the old ones' keys are being moved (or, hashed, are read through until they expire)"),
    keysMoved: z.number().int().describe("keys the old partitions have handed to the new ones so far"),
    startedAt: z.number().int(),
    oldPartitionsLeft: z.number().int().describe("old partitions that may still hold keys the new ones lack"),
  })
  .describe("the rescale under way (DESIGN §12); absent when none is");

/** PATCH {"shards": S}: the count every shard routes by now. */
export const reshardSchema = z.object({
  shards: z.object({ from: z.number().int(), to: z.number().int() }),
  state: z.enum(["done"]).describe("done: every shard judges by the new count (moved batch ids are asked of their old shard for the idempotency window)"),
});

export const streamInfoSchema = z.object({
  stream: z.string(),
  config: streamConfigSchema,
  epoch: z.string().describe("this incarnation of the stream: a deleted and re-created stream has a new one"),
  createdAt: z.number(),
  watermark: z.number(),
  watermarkApplied: z
    .number()
    .describe(
      "the lowest watermark a shard judges by now (DESIGN §12): once it equals `watermark`, the next batch anywhere is judged as with one shard; always equal with one",
    ),
  sources: z.record(z.string(), sourceInfoSchema),
  state: stateTotals,
  rescale: rescaleSchema.optional(),
  shardChange: z
    .object({
      from: z.number().int(),
      to: z.number().int(),
      phase: z.enum(["preparing", "done"]).describe("preparing: the PATCH was cut short, send it again; done: every shard on `to`"),
      until: z.number().int().describe("ms; until then a batch id that moved is asked of its old shard first"),
      earlier: z
        .array(z.object({ from: z.number().int(), until: z.number().int() }))
        .optional()
        .describe(
          "earlier changes still within their windows, newest first: the count before each and when its window ends (a moved id is asked of its shard under each)",
        ),
    })
    .optional()
    .describe("the last change of the shard count (PATCH shards), while it is cut short or within its idempotency window; at most 4 within one window"),
  batches: z.object({ committed: z.number().int() }),
  bookkeeping: z
    .object({
      bytes: z.number().int().describe("the Coordinator's own storage"),
      batchesRemembered: z.number().int().describe("committed batch ids within the idempotency window"),
      idempotencyWindow: z.number().int().describe("ms"),
    })
    .describe("the stream's own records (DESIGN §9): they level off under a steady load"),
  webhooks: webhookCountsSchema.optional(),
});

export const streamListSchema = z.object({
  streams: z.array(
    z.object({
      name: z.string(),
      createdAt: z.number(),
      watermark: z.number(),
      state: stateTotals.describe("as the partitions last reported (during a rescale, asked of them: each key once)"),
      batches: z.object({ committed: z.number().int() }),
    }),
  ),
  next: z.string().nullable().describe("pass as ?after= for the next page; null on the last"),
});

export const stateEntrySchema = z.object({
  key: z.string(),
  eventTime: z.number().nullable(),
  expiresAt: z.number().nullable(),
  // Asked by ?row= only: the key's receipt (DESIGN §11).
  kept: z
    .object({
      batchId: z.string(),
      source: z.string(),
      seq: z.number().int().nullable().describe("its commit number; null once the ledger has forgotten the batch"),
      eventTime: z.number().nullable(),
    })
    .nullable()
    .optional()
    .describe("?row= only: the kept copy's batch (null: kept before receipts were recorded)"),
  dropped: z.number().int().optional().describe("?row= only: copies dropped against the kept copy"),
  conflicts: z.number().int().optional().describe("?row= only: copies whose content differed from it"),
});

export const statePageSchema = z.object({
  partition: z.number().int(),
  watermark: z.number(),
  rows: z.number().int(),
  bytes: z.number().int(),
  keys: z.array(stateEntrySchema).describe("in key order; pass the last key as ?after= for the next page"),
});

export const healthSchema = z.object({
  stream: z.string(),
  status: z.enum(["ok", "warn", "critical"]),
  reasons: z.array(
    z.object({
      code: z.enum(HEALTH_REASON_CODES),
      severity: z.enum(["warn", "critical"]),
      detail: z.string(),
    }),
  ),
  heldBackBy: z.string().nullable(),
  watermark: z.number(),
  watermarkLagMs: z.number(),
  idleSources: z.array(z.string()),
  webhooks: webhookCountsSchema.optional(),
  partitions: partitionCapacitySchema.optional(),
  window: z.object({
    batches: z.number().int(),
    rows: z.number().int(),
    late: z.number().int(),
    rejected: z.number().int(),
    lateRate: z.number().nullable(),
    rejectedRate: z.number().nullable(),
    conflicts: z.number().int().optional(),
    conflictRate: z.number().nullable().optional(),
    watermarkAdvanceMs: z.number().nullable(),
    stateRowsFirst: z.number().nullable(),
    stateRowsLast: z.number().nullable(),
  }),
  state: stateTotals,
});

export const runStartedSchema = z.object({ id: z.string(), stream: z.string(), prefix: z.string(), source: z.string() });

/** RunView in src/sources/files/plan.ts. */
/** The table snapshot a file run waited for (and GET …/publication shows). */
const snapshotBrief = z.object({
  "snapshot-id": z.number(),
  "sequence-number": z.number().int(),
  "total-records": z.number().int(),
  "commit-seq": z.number().int(),
});
export const runSchema = z.object({
  id: z.string(),
  status: z.enum(["running", "done", "failed"]),
  prefix: z.string(),
  source: z.string(),
  listed: z.boolean(),
  files: z.object({ done: z.number().int(), left: z.number().int(), skipped: z.number().int(), failed: z.number().int(), replayed: z.number().int() }),
  input: z.number().int(),
  emitted: z.number().int(),
  duplicates: z.number().int(),
  late: z.number().int(),
  rejected: z.number().int(),
  errors: z.array(z.object({ key: z.string(), detail: z.string() })),
  startedAt: z.number(),
  finishedAt: z.number().nullable(),
  options: z
    .object({
      multiLine: z.boolean().optional(),
      maxFilesPerTrigger: z.number().int().optional(),
      cleanSource: z.enum(["off", "archive", "delete"]).optional(),
      sourceArchiveDir: z.string().optional(),
    })
    .describe("the run's file-source options as given"),
  publication: z
    .object({
      commitSeq: z.number().int().describe("the stream's last commit once every file was settled"),
      manifest: z.number().int().describe("the last commit the committed manifest holds"),
      table: z.number().int().nullable().describe("the last commit the table holds (null: no table)"),
      snapshot: snapshotBrief.nullable().describe("the table snapshot the run waited for"),
    })
    .nullable()
    .describe("null while files are ingested; then what done waits for: done once /output, the manifest and the table hold commitSeq"),
});

export const publicationSchema = z.object({
  stream: z.string(),
  committed: z.number().int().describe("the last commit"),
  output: z.number().int().describe("the last commit GET …/output holds (every one, at once)"),
  manifest: z.number().int().describe("the last commit the committed manifest holds"),
  table: z.number().int().nullable().describe("the last commit the Iceberg table holds (null: no table)"),
  snapshot: snapshotBrief.nullable().describe("the table's current snapshot"),
  shards: z
    .array(z.object({ committed: z.number().int(), manifest: z.number().int(), table: z.number().int().nullable() }))
    .optional()
    .describe("a stream with several shards: the figures above count commits over them; these are each shard's own last commits (wait for each)"),
});

export const credentialSchema = z.object({
  id: z.string(),
  source: z.string(),
  type: z.enum(["token", "hmac", "stripe", "github", "shopify", "standard-webhooks"]),
  label: z.string().nullable(),
  createdAt: z.number(),
});

export const credentialCreatedSchema = credentialSchema.extend({ secret: z.string().describe("shown once, never again") });

export const credentialListSchema = z.object({ credentials: z.array(credentialSchema) });

export const healthzSchema = z.object({ status: z.literal("ok") });

export type Problem = z.infer<typeof problemSchema>;
export type Outcome = z.infer<typeof outcomeSchema>;
export type ProgressReport = z.infer<typeof progressReportSchema>;
export type StreamConfigView = z.infer<typeof streamConfigSchema>;
export type PutStreamResult = z.infer<typeof putStreamResultSchema>;
export type SourceInfo = z.infer<typeof sourceInfoSchema>;
export type Rescale = z.infer<typeof rescaleSchema>;
export type Reshard = z.infer<typeof reshardSchema>;
export type StreamInfo = z.infer<typeof streamInfoSchema>;
export type StreamList = z.infer<typeof streamListSchema>;
export type StateEntry = z.infer<typeof stateEntrySchema>;
export type PartitionState = z.infer<typeof statePageSchema>;
export type Health = z.infer<typeof healthSchema>;
export type RunStarted = z.infer<typeof runStartedSchema>;
export type Run = z.infer<typeof runSchema>;
export type Publication = z.infer<typeof publicationSchema>;
export type Credential = z.infer<typeof credentialSchema>;
export type CreatedCredential = z.infer<typeof credentialCreatedSchema>;
export type { TableSnapshot } from "./table-snapshot-schema";
export type Progress = z.infer<typeof progressSchema>;
export type CredentialList = z.infer<typeof credentialListSchema>;
export type Healthz = z.infer<typeof healthzSchema>;

const ms = z.number().nullable();
const adviceFiguresSchema = z.object({
  rows: z.number().int().describe("accepted rows (emitted, duplicate or late)"),
  duplicates: z.number().int(),
  duplicateRate: z.number().describe("duplicates / rows"),
  gaps: z
    .object({ count: z.number().int(), p50: ms, p90: ms, p99: ms, "p99.9": ms, max: ms })
    .describe("|T − T_first| of each duplicate to the copy kept, ms (null: no duplicates)"),
  disorder: z
    .object({ events: z.number().int(), outOfOrder: z.number().int(), outOfOrderShare: z.number(), p50: ms, p99: ms, "p99.9": ms, max: ms })
    .describe("per row, how far behind its source's max event time before it, ms"),
  recommendation: z.object({
    watermarkDelay: z.string().describe('Spark-style, e.g. "15 minutes"'),
    delayMs: z.number(),
    margin: z.number(),
    gapP999: z.number(),
    disorderP999: z.number(),
    basis: z.enum(["duplicate gaps", "disorder"]),
    neededMs: z.number().describe("max(gapP999, disorderP999) × margin, before rounding up"),
    sample: z.object({ gaps: z.number().int(), events: z.number().int() }).describe("how many values the two p99.9 were read from"),
    caveat: z.string().nullable().describe("a small-sample warning (fewer than 1,000 of either), else null"),
    floor: z
      .object({ ms: z.number(), reason: z.string() })
      .optional()
      .describe("present when the delay was raised above what the figures need: a webhook source's provider keeps retrying that long"),
  }),
  currentDelay: z.object({ ms: z.number(), interval: z.string() }).nullable().describe("the delay configured now (null: no event time)"),
});

export const adviceSchema = z.object({
  stream: z.string(),
  margin: z.number().describe("the p99.9 figures are multiplied by it before rounding up to a friendly delay"),
  overall: adviceFiguresSchema.describe("over all sources: the stream's recommendation (currentDelay: the stream's delay)"),
  sources: z.record(z.string(), adviceFiguresSchema).describe("per source (gaps: of the duplicates the source sent; currentDelay: its own delay)"),
});
export type Advice = z.infer<typeof adviceSchema>;

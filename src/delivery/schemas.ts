import { z } from "zod";

/** The JSON bodies the destination routes answer (zod only: the OpenAPI document and Node-side code import them). */
export const destinationSchema = z.object({
  stream: z.string(),
  name: z.string(),
  type: z.enum(["http", "queue"]),
  url: z.string().optional().describe("http: where rows are POSTed"),
  binding: z.string().optional().describe("queue: the Queues producer binding"),
  timeoutMs: z.number().int().optional().describe("http: per attempt"),
  retryForMs: z.number().int().describe("how long a row is retried before the dead lane"),
  createdAt: z.number(),
  deliveredSeq: z
    .number()
    .int()
    .describe("every row of every commit up to this seq is delivered (or in the dead lane); on a stream of several shards, shard 0's"),
  deliveredCursor: z
    .string()
    .optional()
    .describe("a stream of several shards: deliveredSeq per shard, comma-separated (the form X-Commit-Seq and replay's `after` take)"),
  pending: z.number().int().describe("rows read and not yet delivered"),
  failing: z.boolean().describe("a pending row has failed at least once, or the destination is paused"),
  paused: z.boolean().describe("the receiver answered 410 Gone; PUT the destination again to resume"),
  lastError: z.string().nullable(),
  lastErrorAt: z.number().nullable(),
  lastSuccessAt: z.number().nullable(),
  lagMs: z.number().describe("how long the oldest undelivered row has been committed (0: caught up)"),
  delivered: z.number().int().describe("rows delivered, all time"),
  failures: z.number().int().describe("failed attempts, all time"),
  dead: z.number().int().describe("rows in the dead lane"),
  lanes: z.number().int().describe("lanes sending at once, each up to 6 requests in flight (http) or one sendBatch (queue)"),
  ordering: z
    .union([z.literal("none"), z.object({ by: z.array(z.string()) })])
    .describe('"none", or {by: [columns]}: rows with equal values are delivered one at a time, in commit order'),
  maxPerSecond: z.number().int().nullable().describe("at most this many attempts start in any second (null: no cap)"),
  laneStatus: z
    .array(
      z.object({
        lane: z.number().int(),
        deliveredSeq: z.number().int(),
        deliveredCursor: z.string().optional(),
        pending: z.number().int(),
        lagMs: z.number(),
      }),
    )
    .describe("each lane's progress"),
  secrets: z
    .array(z.object({ id: z.string(), createdAt: z.number(), expiresAt: z.number().nullable() }))
    .describe("http: the secrets that sign now (never their values)"),
});
const attemptSchema = z.object({
  at: z.number().describe("when it started (ms since the epoch)"),
  ms: z.number().describe("how long it took"),
  status: z.number().int().nullable().describe("the HTTP status (null: no answer, or a queue)"),
  error: z.string().nullable().describe("why it failed (never the row's bytes); null: delivered"),
});
const ID_FORM = "{stream}.{seq}.{index}, or {stream}~{n}.{seq}.{index} for the n-th creation of the stream's name";
export const rowAttemptsSchema = z.object({
  id: z.string().describe(`the webhook-id: ${ID_FORM}`),
  seq: z.number().int(),
  index: z.number().int(),
  state: z.enum(["pending", "dead", "delivered"]),
  attempts: z.array(attemptSchema).describe("the last few attempts, oldest first"),
  nextAt: z.number().optional().describe("pending: when the next attempt is due"),
  at: z.number().optional().describe("dead: when it went to the dead lane; delivered: when it was delivered"),
});
export const attemptsListSchema = z.object({ rows: z.array(rowAttemptsSchema) });
export const destinationPutSchema = z.object({
  stream: z.string(),
  name: z.string(),
  status: z.enum(["created", "updated"]),
  secret: z.string().optional().describe("http, on creation: the whsec_ signing secret, shown once"),
  destination: destinationSchema,
});
export const destinationListSchema = z.object({ destinations: z.array(destinationSchema) });
export const deadLaneSchema = z.object({
  rows: z.array(
    z.object({
      id: z.string().describe(`the webhook-id it had: ${ID_FORM}`),
      seq: z.number().int(),
      index: z.number().int(),
      attempts: z.number().int(),
      lastError: z.string().nullable(),
      diedAt: z.number(),
      committedAt: z.number(),
      row: z.unknown(),
      history: z.array(attemptSchema).describe("its last few attempts, oldest first"),
    }),
  ),
  next: z.string().nullable().describe("pass as ?after= for the next page"),
});
export const replaySchema = z.object({
  fromSeq: z
    .number()
    .int()
    .optional()
    .describe("the first commit sent again (the lowest, when several shards are); absent when `from: dead` found no dead row"),
  fromSeqs: z.array(z.number().int()).optional().describe("when more than one shard is sent again: each one's first commit sent again"),
  fromDead: z.number().int().describe("rows taken back from the dead lane"),
});
export const rotatedSchema = z.object({ id: z.string(), secret: z.string().describe("the new whsec_ secret, shown once") });

import { z } from "zod";
import { formatInterval, parseInterval } from "../stream/interval";
import { orderingSchema, type Ordering } from "./ordering";

/**
 * A destination's config (PUT /v1/streams/{stream}/destinations/{name}),
 * validated at the edge. Durations take the stream config's forms
 * ("10 seconds", "3 days" or milliseconds).
 */
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MIN_TIMEOUT_MS = 100;
export const MAX_TIMEOUT_MS = 30_000;
export const DEFAULT_RETRY_FOR_MS = 3 * 24 * 60 * 60 * 1000;
const MAX_RETRY_FOR_MS = 14 * 24 * 60 * 60 * 1000;
/** The old secret keeps signing this long after a rotation (Svix's overlap). */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
const MAX_ROTATION_OVERLAP_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * Destinations a stream may have: each is an object with its own alarm and
 * fetches, and /metrics and the list make one call per destination. Svix and
 * Hookdeck bound endpoints per application too; more consumers of one stream
 * belong behind one receiver (or a queue).
 */
export const MAX_DESTINATIONS_PER_STREAM = 20;
/** Queue bindings rows may not go to: the Worker's own ingest queue and its dead-letter queue. */
export const RESERVED_QUEUE_BINDINGS = ["EVENTS", "DLQ"];

const duration = (what: string, min: number, max: number) =>
  z.union([z.string(), z.number()]).transform((v, ctx) => {
    try {
      const ms = parseInterval(v);
      if (ms < min || ms > max) throw new Error(`${what} must be between ${min} ms and ${max} ms`);
      return ms;
    } catch (e) {
      ctx.addIssue({ code: "custom", message: (e as Error).message });
      return z.NEVER;
    }
  });

/** retryFor's least: a row gets a few attempts at least (the first retries come after 0.5-1 s and 1-2 s). */
export const MIN_RETRY_FOR_MS = 1_000;
const retryFor = duration("retryFor", MIN_RETRY_FOR_MS, MAX_RETRY_FOR_MS)
  .optional()
  .describe(
    `how long a row is retried before it goes to the dead lane (default "${formatInterval(DEFAULT_RETRY_FOR_MS)}", at least "${formatInterval(MIN_RETRY_FOR_MS)}", at most "${formatInterval(MAX_RETRY_FOR_MS)}")`,
  );

/**
 * Lanes: sender objects a destination's rows are spread over, each with at
 * most LANE_CONNECTIONS requests in flight (an object's outgoing connections
 * on Cloudflare), so a destination sends up to lanes × 6 rows per round trip
 * of the handler. The default keeps up with what one stream takes in (about a
 * thousand webhook requests a second) at a handler that answers in 100 ms;
 * a lane without rows due costs nothing.
 */
export const DEFAULT_LANES = 16;
export const MAX_LANES = 64;
export const LANE_CONNECTIONS = 6;
const MAX_PER_SECOND = 10_000;

const lanes = z
  .number()
  .int()
  .min(1)
  .max(MAX_LANES)
  .optional()
  .describe(`senders the rows are spread over, each up to ${LANE_CONNECTIONS} in flight (default ${DEFAULT_LANES}); changeable on a live destination`);
const maxPerSecond = z
  .number()
  .int()
  .min(1)
  .max(MAX_PER_SECOND)
  .nullable()
  .optional()
  .describe("at most this many attempts start in any second, over all lanes (default: no cap)");

export const destinationBodySchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("http"),
    url: z.string().max(2048).describe('https:// with a public host (loopback only when ALLOW_LOOPBACK_DESTINATIONS is "true")'),
    timeout: duration("timeout", MIN_TIMEOUT_MS, MAX_TIMEOUT_MS)
      .optional()
      .describe(
        `per attempt (default "${formatInterval(DEFAULT_TIMEOUT_MS)}", at least ${formatInterval(MIN_TIMEOUT_MS)}, at most ${formatInterval(MAX_TIMEOUT_MS)})`,
      ),
    retryFor,
    lanes,
    ordering: orderingSchema.optional(),
    maxPerSecond,
  }),
  z.strictObject({
    type: z.literal("queue"),
    binding: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/)
      .describe("a Queues producer binding of this Worker (wrangler.toml [[queues.producers]])"),
    retryFor,
    lanes,
    maxPerSecond,
    ordering: z
      .unknown()
      .refine((v) => v === undefined || v === "none", {
        message:
          'a queue destination keeps no order (Cloudflare Queues delivers a batch\'s messages in any order): send "none" or leave it out; ordering is for http destinations',
      })
      .optional(),
  }),
]);

export type DestinationBody = z.output<typeof destinationBodySchema>;

/** How a destination sends, whatever its type. */
export interface Delivery {
  retryForMs: number;
  lanes: number;
  ordering: Ordering;
  /** null: no cap */
  maxPerSecond: number | null;
}

/** What the Destination object keeps (secrets apart). */
export type DestinationConfig = ({ type: "http"; url: string; timeoutMs: number } | { type: "queue"; binding: string }) & Delivery;

export function toConfig(body: DestinationBody): DestinationConfig {
  const delivery: Delivery = {
    retryForMs: body.retryFor ?? DEFAULT_RETRY_FOR_MS,
    lanes: body.lanes ?? DEFAULT_LANES,
    ordering: body.type === "http" ? (body.ordering ?? "none") : "none",
    maxPerSecond: body.maxPerSecond ?? null,
  };
  return body.type === "http"
    ? { type: "http", url: body.url, timeoutMs: body.timeout ?? DEFAULT_TIMEOUT_MS, ...delivery }
    : { type: "queue", binding: body.binding, ...delivery };
}

/** A config as stored: one kept before lanes existed takes the defaults (DEFAULT_LANES, no order, no cap). */
export function storedConfig(stored: Partial<DestinationConfig> & Pick<DestinationConfig, "type">): DestinationConfig {
  return { lanes: DEFAULT_LANES, ordering: "none", maxPerSecond: null, ...stored } as DestinationConfig;
}

export const rotateBodySchema = z
  .strictObject({
    overlap: duration("overlap", 0, MAX_ROTATION_OVERLAP_MS)
      .optional()
      .describe(
        `how long the old secret keeps signing too (default "${formatInterval(DEFAULT_ROTATION_OVERLAP_MS)}", at most "${formatInterval(MAX_ROTATION_OVERLAP_MS)}")`,
      ),
  })
  .default({});

export const replayBodySchema = z.union([
  z.strictObject({
    fromSeq: z
      .number()
      .int()
      .min(1)
      .describe(
        "the first commit seq to send again, with the later commits of its shard (the seq of a webhook-id {stream}.{seq}.{index} or {stream}~{n}.{seq}.{index})",
      ),
  }),
  z.strictObject({
    from: z.literal("dead").describe("every shard from its oldest dead row's commit on (the dashboard's replay button)"),
  }),
  z.strictObject({
    after: z
      .string()
      .max(8192)
      .describe(
        "send again every commit after this cursor, in every shard: one commit number per shard, comma-separated (deliveredCursor, X-Commit-Seq); a shard not named from its start",
      ),
  }),
]);

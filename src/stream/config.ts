import { NAME_PATTERN, NAME_RULE } from "./name-rule";
import { z } from "zod";
import { intervalField as interval, MAX_INTERVAL_CHARS } from "./interval-field";
import { own } from "../lib/own";
import { ColumnBudget } from "./table-fields";
import { PROVIDER_VOLATILE } from "./provider-volatile";
import { expandVolatile, WEBHOOK_PRESET } from "./volatile-fields";
import { shardsField } from "./shards";
import { tableConfigSchema, type PartitionBy } from "./table-options";

export const MODES = ["within-watermark", "event-time-key", "global"] as const;
export type Mode = (typeof MODES)[number];
export const TIMESTAMP_TYPES = ["timestamp", "timestamp:s", "timestamp:ms"] as const;
export type TimestampType = (typeof TIMESTAMP_TYPES)[number];
export const COLUMN_TYPES = ["string", "int", "long", "double", "boolean", ...TIMESTAMP_TYPES] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export function isTimestampType(type: ColumnType | undefined): type is TimestampType {
  return type !== undefined && (TIMESTAMP_TYPES as readonly string[]).includes(type);
}

/**
 * What one stream's config may hold. A config is read on every call to its
 * Coordinator and rendered into /metrics and GET /v1/streams/{stream}, so it
 * is kept small: each bound is one constant, and its message is made from it.
 */
export const MAX_CONFIG_BYTES = 64 * 1024;
export const MAX_SOURCES = 100;
export const MAX_SCHEMA_COLUMNS = 1_000;
export const MAX_KEY_COLUMNS = 16;
/** volatile fields, and a content key's excluded fields */
export const MAX_FIELD_LIST = 64;
export { MAX_INTERVAL_CHARS };

// "__proto__" would be swallowed by an object literal's prototype setter somewhere along the way.
const column = z
  .string()
  .min(1)
  .max(256)
  .refine((c) => c !== "__proto__", '"__proto__" cannot be a column name');

/**
 * A source's own caps on its event times (they default to the stream's): how
 * far ahead of the server clock, and how far ahead of what the watermark
 * implies, so that one source cannot drag the watermark into the future.
 */
const sourceSchema = z.strictObject({
  watermarkDelay: interval.optional().describe("this source's own delay"),
  disabled: z.boolean().optional().describe("refuse this source's batches"),
  maxEventTimeSkew: interval.optional().describe("default: the stream's"),
  maxAheadOfWatermark: interval.optional().describe("default: the stream's"),
  idleTimeout: interval.optional().describe("default: the stream's"),
  multiLine: z
    .boolean()
    .optional()
    .describe("file runs of this source: each .json file is one JSON document (true) or JSON Lines (false); a run's own multiLine wins"),
  maxWebhookBytes: z
    .number()
    .int()
    .min(1024)
    .max(32 * 1024 * 1024)
    .optional()
    .describe(`this source's provider webhook deliveries: the most body bytes read before the signature is checked (default ${1024 * 1024}, 1 MiB)`),
});

const limitsSchema = z.strictObject({
  // 32 MiB is the most a Durable Object RPC carries, and the Worker's hard cap.
  maxBodyBytes: z
    .number()
    .int()
    .min(1024)
    .max(32 * 1024 * 1024)
    .optional()
    .describe("default 10 MiB"),
  maxRows: z.number().int().min(1).max(100_000).optional().describe("rows per batch; default 10,000"),
});

// A field of a row: "received_at", or a dotted path into nested objects, "meta.attempt".
const fieldPath = z
  .string()
  .min(1)
  .max(256)
  .refine((c) => c.split(".").every((part) => part !== "" && part !== "__proto__"), 'a field or a dotted path of fields, none empty or "__proto__"');

/** "key": {"content": {"exclude": [...]}}: the row's canonical JSON without these fields is its key (src/stream/content.ts). */
const contentKeySchema = z
  .strictObject({
    content: z.strictObject({
      exclude: z
        .array(fieldPath)
        .max(MAX_FIELD_LIST, `at most ${MAX_FIELD_LIST} fields`)
        .default([])
        .describe("fields left out of the content (top-level or dotted paths)"),
    }),
  })
  .describe("a content key: the SHA-256 of the row's canonical JSON (RFC 8785) without the excluded fields");

/** The body of PUT /v1/streams/{stream}. Unknown fields are an error, not ignored. */
export const streamBodySchema = z
  .strictObject({
    key: z
      .union([z.array(column).min(1).max(MAX_KEY_COLUMNS, `at most ${MAX_KEY_COLUMNS} key columns`), contentKeySchema], {
        error: 'a list of key columns, or {"content": {"exclude": [fields]}}',
      })
      .describe('distinct column names (a time in the key is compared as an instant), or {"content": {"exclude": [fields]}}; bound at creation'),
    eventTime: column.optional().describe("the event-time column; required unless mode is global"),
    mode: z.enum(MODES).default("within-watermark"),
    watermarkDelay: interval.optional().describe('"10 seconds", "2 hours", "1 hour 30 minutes", "500 ms", or ms; required when eventTime is set'),
    partitions: z.number().int().min(1).max(1024).default(8).describe("state partitions"),
    shards: shardsField,
    watermarkPolicy: z.enum(["min", "max"]).default("min").describe("how the sources' watermarks combine"),
    schema: z
      .record(column, z.enum(COLUMN_TYPES))
      .refine((s) => Object.keys(s).length <= MAX_SCHEMA_COLUMNS, `at most ${MAX_SCHEMA_COLUMNS} columns may be declared`)
      .default({})
      .describe(`column → type: coerces and checks the columns it names; others pass through; at most ${MAX_SCHEMA_COLUMNS} columns`),
    sources: z
      .record(z.string().regex(NAME_PATTERN, NAME_RULE), sourceSchema)
      .refine((s) => Object.keys(s).length <= MAX_SOURCES, `at most ${MAX_SOURCES} sources may be declared`)
      .default({})
      .describe(`declared sources by name; at most ${MAX_SOURCES}`),
    maxEventTimeSkew: interval.default(86_400_000).describe('the clock-skew guard: rows further ahead of the server clock are rejected; default "1 day"'),
    maxAheadOfWatermark: interval
      .optional()
      .describe("rows further ahead of the watermark + the source's delay are rejected (not while the watermark is 0); default: maxEventTimeSkew"),
    // A source silent this long leaves the min until it sends again (Flink's withIdleness).
    idleTimeout: interval
      .optional()
      .describe("a source whose last batch committed this long ago is idle and leaves the watermark's min/max until it sends again"),
    limits: limitsSchema.default({}),
    // Committed output appended to an Iceberg table in R2 (src/stream/table-options.ts).
    table: tableConfigSchema.optional().describe("append committed output to an Iceberg table in R2"),
    idempotencyWindow: interval
      .optional()
      .describe(
        'how long a committed batch id is remembered: a retry within it is answered with its recorded outcome; at least "1 minute", at most "365 days"; default "24 hours"',
      ),
    stateKeys: z
      .enum(["text", "hashed"])
      .default("text")
      .describe(
        "how partitions remember keys: their text (the state reader lists them), or a 64-bit hash (compact state, ~32 B a key; the state reader lists hashes); bound at creation",
      ),
    // What counts as the same event (DESIGN §11, docs/concepts/same-event.md).
    volatile: z
      .array(fieldPath)
      .max(MAX_FIELD_LIST, `at most ${MAX_FIELD_LIST} fields`)
      .default([])
      .describe(
        "fields (or dotted paths) that may differ between copies of one event without making them a conflict, e.g. a delivery attempt counter; \"webhook:<provider>\" for a provider's (stripe, github, shopify, standard-webhooks), which rows from that provider's webhook leave out by default; bound at creation",
      ),
    onConflict: z
      .enum(["drop", "reject"])
      .default("drop")
      .describe(
        "a copy with a remembered id whose content differs from the kept copy's: dropped (counted in duplicates and conflicts) or rejected; either way it goes to the conflicts lane",
      ),
    keepDuplicates: z.boolean().default(false).describe("write every dropped copy to the duplicates lane, with the kept copy's reference"),
  })
  .superRefine((b, ctx) => {
    if (b.mode !== "global" && b.eventTime === undefined) {
      ctx.addIssue({ code: "custom", path: ["eventTime"], message: `required in mode ${b.mode}` });
    }
    if (b.eventTime !== undefined && b.watermarkDelay === undefined) {
      ctx.addIssue({ code: "custom", path: ["watermarkDelay"], message: "required when eventTime is set" });
    }
    b.volatile.forEach((f, i) => {
      const preset = WEBHOOK_PRESET.exec(f)?.[1];
      if (preset !== undefined && !Object.hasOwn(PROVIDER_VOLATILE, preset)) {
        ctx.addIssue({ code: "custom", path: ["volatile", i], message: `no webhook preset "${preset}": one of ${Object.keys(PROVIDER_VOLATILE).join(", ")}` });
      }
    });
    if (!Array.isArray(b.key) && b.volatile.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["volatile"],
        message: "a content key has no conflicts: leave the fields out of the content with key.content.exclude instead",
      });
    }
    if (b.idempotencyWindow !== undefined && (b.idempotencyWindow < MIN_IDEMPOTENCY_WINDOW_MS || b.idempotencyWindow > MAX_IDEMPOTENCY_WINDOW_MS)) {
      ctx.addIssue({ code: "custom", path: ["idempotencyWindow"], message: 'must be at least "1 minute" and at most "365 days"' });
    }
    if (b.idleTimeout === 0) ctx.addIssue({ code: "custom", path: ["idleTimeout"], message: "must be more than 0" });
    for (const [name, src] of Object.entries(b.sources)) {
      if (src.idleTimeout === 0) ctx.addIssue({ code: "custom", path: ["sources", name, "idleTimeout"], message: "must be more than 0" });
    }
    if (b.table?.partitionBy !== undefined && b.table.partitionBy !== "none" && b.eventTime === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["table", "partitionBy"],
        message: `"${b.table.partitionBy}" partitions by the event-time column: set eventTime, or use "none"`,
      });
    }
    const declared = Object.keys(b.schema).length;
    if (b.table?.maxColumns !== undefined && b.table.maxColumns < declared) {
      ctx.addIssue({ code: "custom", path: ["table", "maxColumns"], message: `the schema declares ${declared} columns: maxColumns must be at least that` });
    }
    // A table's declared columns follow the rules its other columns do (src/stream/table-fields.ts).
    if (b.table && declared > 0) {
      const problem = new ColumnBudget([], Number.POSITIVE_INFINITY).admit(b.schema);
      if (problem !== null) ctx.addIssue({ code: "custom", path: ["schema"], message: `with a table: ${problem}` });
    }
    if (Array.isArray(b.key) && new Set(b.key).size !== b.key.length) {
      ctx.addIssue({ code: "custom", path: ["key"], message: "key columns must be distinct" });
    }
    if (b.eventTime !== undefined && own(b.schema, b.eventTime) !== undefined && !isTimestampType(own(b.schema, b.eventTime))) {
      ctx.addIssue({
        code: "custom",
        path: ["schema", b.eventTime],
        message: `the event-time column must be a timestamp (${TIMESTAMP_TYPES.map((t) => `"${t}"`).join(", ")})`,
      });
    }
  });

export interface StreamConfig {
  /** the key columns; empty for a content key */
  key: string[];
  /** a content key (src/stream/content.ts): the row's canonical JSON without these fields; absent: the key columns */
  contentKey?: { exclude: string[] };
  /** fields left out of the conflict digest of an id-keyed stream's kept copies; absent: none */
  volatile?: string[];
  /** absent: "drop" */
  onConflict?: "reject";
  /** every dropped copy goes to the duplicates lane */
  keepDuplicates?: true;
  eventTime: string | null;
  mode: Mode;
  /** ms */
  watermarkDelay: number;
  partitions: number;
  /** ingest shards (src/stream/shards.ts, DESIGN §12); absent: 1 */
  shards?: number;
  /** fewer than `shards` take new batches (set by PATCH {"shards"} only; absent: all of them) */
  intakeShards?: number;
  watermarkPolicy: "min" | "max";
  schema: Record<string, ColumnType>;
  /** declared sources: their own delay and caps; a disabled source's batches are refused */
  sources: Record<string, SourceConfig>;
  /** ms; rows whose event time is further ahead of now are rejected. */
  maxEventTimeSkew: number;
  /** ms; rows further ahead of (watermark + delay) are rejected; defaults to maxEventTimeSkew */
  maxAheadOfWatermark?: number;
  /** ms; a source that has not committed a batch for this long is idle and leaves the watermark's min/max */
  idleTimeout?: number;
  limits: { maxBodyBytes: number; maxRows: number };
  /** committed output also goes to an Iceberg table (src/table) */
  table?: { format: "iceberg"; location?: string; maxColumns?: number; partitionBy?: PartitionBy; retain?: number };
  /** partitions keep 64-bit key hashes instead of key text (src/stream/key-hash.ts); absent: text */
  stateKeys?: "hashed";
  /** ms a committed batch id is remembered (DESIGN §9); absent: DEFAULT_IDEMPOTENCY_WINDOW_MS */
  idempotencyWindow?: number;
}

export interface SourceConfig {
  watermarkDelay?: number;
  disabled?: boolean;
  maxEventTimeSkew?: number;
  maxAheadOfWatermark?: number;
  /** ms; the source's own idle timeout (defaults to the stream's) */
  idleTimeout?: number;
  /** how file runs of this source read .json files (src/sources/files/parse.ts) */
  multiLine?: boolean;
  /** the most bytes of a provider webhook's body read before its signature is checked (default DEFAULT_MAX_WEBHOOK_BYTES) */
  maxWebhookBytes?: number;
}

/**
 * A provider's delivery is read whole before its signature can be checked, so
 * an unsigned caller decides how much is read: 1 MiB by default (Stripe's and
 * GitHub's payloads are capped at 25 MB but are a few KB; Svix caps at 1 MB).
 */
export const DEFAULT_MAX_WEBHOOK_BYTES = 1024 * 1024;

/** How many bytes of a webhook delivery to `source` are read at most: its own cap, never above the stream's body limit. */
export function webhookBodyLimit(config: StreamConfig, source: string): number {
  return Math.min(sourceConfig(config, source)?.maxWebhookBytes ?? DEFAULT_MAX_WEBHOOK_BYTES, config.limits.maxBodyBytes);
}

/** The idempotency window (DESIGN §9): 24 hours by default, as Stripe keeps idempotency keys. */
export const DEFAULT_IDEMPOTENCY_WINDOW_MS = 86_400_000;
export const MIN_IDEMPOTENCY_WINDOW_MS = 60_000;
export const MAX_IDEMPOTENCY_WINDOW_MS = 365 * 86_400_000;

/** How long a committed batch id of this stream is remembered. */
export function idempotencyWindowOf(config: StreamConfig): number {
  return config.idempotencyWindow ?? DEFAULT_IDEMPOTENCY_WINDOW_MS;
}

export const DEFAULT_LIMITS = { maxBodyBytes: 10 * 1024 * 1024, maxRows: 10_000 };

export type FieldError = { path: string; message: string };
export type ConfigResult = { ok: true; config: StreamConfig } | { ok: false; errors: FieldError[] };

export function parseStreamConfig(body: unknown): ConfigResult {
  const unseen = keysZodSkips(body);
  const r = streamBodySchema.safeParse(body);
  if (!r.success || unseen.length > 0) return { ok: false, errors: [...unseen, ...(r.success ? [] : r.error.issues.flatMap((i) => configIssue(i, [])))] };
  const b = r.data;
  return {
    ok: true,
    config: {
      key: Array.isArray(b.key) ? b.key : [],
      ...(Array.isArray(b.key) ? {} : { contentKey: { exclude: b.key.content.exclude } }),
      eventTime: b.eventTime ?? null,
      mode: b.mode,
      watermarkDelay: b.watermarkDelay ?? 0,
      partitions: b.partitions,
      ...(b.shards > 1 ? { shards: b.shards } : {}),
      watermarkPolicy: b.watermarkPolicy,
      schema: b.schema,
      sources: b.sources,
      maxEventTimeSkew: b.maxEventTimeSkew,
      ...(b.maxAheadOfWatermark === undefined ? {} : { maxAheadOfWatermark: b.maxAheadOfWatermark }),
      ...(b.idleTimeout === undefined ? {} : { idleTimeout: b.idleTimeout }),
      limits: { ...DEFAULT_LIMITS, ...b.limits },
      ...(b.table ? { table: b.table } : {}),
      ...(b.stateKeys === "hashed" ? { stateKeys: "hashed" as const } : {}),
      ...(b.volatile.length > 0 ? { volatile: expandVolatile(b.volatile) } : {}),
      ...(b.onConflict === "reject" ? { onConflict: "reject" as const } : {}),
      ...(b.keepDuplicates ? { keepDuplicates: true as const } : {}),
      ...(b.idempotencyWindow === undefined ? {} : { idempotencyWindow: b.idempotencyWindow }),
    },
  };
}

/**
 * zod's records skip a "__proto__" entry without a word (JSON.parse makes it
 * an own property), so a source or a column by that name would vanish: each
 * is refused here by the rule its names follow. Other names, "constructor"
 * or "toString", are own properties zod keeps, and are read with own().
 */
function keysZodSkips(body: unknown): FieldError[] {
  if (body === null || typeof body !== "object") return [];
  const b = body as { schema?: unknown; sources?: unknown };
  const dunder = (v: unknown) => v !== null && typeof v === "object" && Object.hasOwn(v, "__proto__");
  return [
    ...(Object.hasOwn(b, "schema") && dunder(b.schema) ? [{ path: "schema.__proto__", message: '"__proto__" cannot be a column name' }] : []),
    ...(Object.hasOwn(b, "sources") && dunder(b.sources) ? [{ path: "sources.__proto__", message: NAME_RULE }] : []),
  ];
}

/**
 * A config's issue as a field error. `key` is a list of columns or a content
 * key: zod says only "Invalid input" when a union fails, so the issues of the
 * branch the value's type chose are reported instead ("at most 16 key columns").
 */
function configIssue(i: z.core.$ZodIssue, prefix: PropertyKey[]): FieldError[] {
  const path = [...prefix, ...i.path];
  if (i.code === "invalid_union") {
    const chosen = i.errors.filter((branch) => !branch.some((b) => b.code === "invalid_type" && b.path.length === 0));
    if (chosen.length === 1) return chosen[0].flatMap((b) => configIssue(b, path));
  }
  // A record's key that breaks its rule (a source's name): zod says "Invalid key in record"; the rule's own words say why.
  if (i.code === "invalid_key" && i.issues.length > 0) return [{ path: path.map(String).join("."), message: i.issues.map((k) => k.message).join("; ") }];
  return [{ path: path.map(String).join(".") || "(body)", message: i.message }];
}

export function zodErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message }));
}

/** The delay that turns a source's max event time into its watermark. */
export function delayOf(config: StreamConfig, source: string): number {
  return sourceConfig(config, source)?.watermarkDelay ?? config.watermarkDelay;
}

/** How long a source may be silent before it is idle (undefined: never idle). */
export function idleTimeoutOf(config: StreamConfig, source: string): number | undefined {
  return sourceConfig(config, source)?.idleTimeout ?? config.idleTimeout;
}

/** A declared source's settings (own properties only: a source may be called "constructor"). */
export function sourceConfig(config: StreamConfig, source: string): SourceConfig | undefined {
  return own(config.sources, source);
}

/**
 * How far ahead a source's event times may be: of the server clock (`skew`) and
 * of the newest event time the watermark in force implies, watermark + delay
 * (`ahead`). Each falls back to the stream's, and `ahead` to `skew`.
 */
export function eventTimeCaps(config: StreamConfig, source: string): { skew: number; ahead: number } {
  const s = sourceConfig(config, source);
  const skew = s?.maxEventTimeSkew ?? config.maxEventTimeSkew;
  return { skew, ahead: s?.maxAheadOfWatermark ?? config.maxAheadOfWatermark ?? skew };
}

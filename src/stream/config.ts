import { z } from "zod";
import { IntervalError, parseInterval } from "./interval";

export const MODES = ["within-watermark", "event-time-key", "global"] as const;
export type Mode = (typeof MODES)[number];
export const TIMESTAMP_TYPES = ["timestamp", "timestamp:s", "timestamp:ms"] as const;
export type TimestampType = (typeof TIMESTAMP_TYPES)[number];
export const COLUMN_TYPES = ["string", "int", "long", "double", "boolean", ...TIMESTAMP_TYPES] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export function isTimestampType(type: ColumnType | undefined): type is TimestampType {
  return type !== undefined && (TIMESTAMP_TYPES as readonly string[]).includes(type);
}

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const nameMessage = "1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit";

const interval = z.union([z.string(), z.number()]).transform((v, ctx) => {
  try {
    return parseInterval(v);
  } catch (e) {
    ctx.addIssue({ code: "custom", message: e instanceof IntervalError ? e.message : String(e) });
    return z.NEVER;
  }
});

const column = z.string().min(1).max(256);

const sourceSchema = z.strictObject({ watermarkDelay: interval.optional(), disabled: z.boolean().optional() });

const limitsSchema = z.strictObject({
  // 32 MiB is the most a Durable Object RPC carries, and the Worker's hard cap.
  maxBodyBytes: z.number().int().min(1024).max(32 * 1024 * 1024).optional(),
  maxRows: z.number().int().min(1).max(100_000).optional(),
});

/** The body of PUT /v1/streams/{stream}. Unknown fields are an error, not ignored. */
export const streamBodySchema = z
  .strictObject({
    key: z.array(column).min(1).max(16),
    eventTime: column.optional(),
    mode: z.enum(MODES).default("within-watermark"),
    watermarkDelay: interval.optional(),
    partitions: z.number().int().min(1).max(1024).default(8),
    watermarkPolicy: z.enum(["min", "max"]).default("min"),
    schema: z.record(column, z.enum(COLUMN_TYPES)).default({}),
    sources: z.record(z.string().regex(NAME_PATTERN, nameMessage), sourceSchema).default({}),
    maxEventTimeSkew: interval.default(86_400_000),
    limits: limitsSchema.default({}),
  })
  .superRefine((b, ctx) => {
    if (b.mode !== "global" && b.eventTime === undefined) {
      ctx.addIssue({ code: "custom", path: ["eventTime"], message: `required in mode ${b.mode}` });
    }
    if (b.eventTime !== undefined && b.watermarkDelay === undefined) {
      ctx.addIssue({ code: "custom", path: ["watermarkDelay"], message: "required when eventTime is set" });
    }
    if (new Set(b.key).size !== b.key.length) {
      ctx.addIssue({ code: "custom", path: ["key"], message: "key columns must be distinct" });
    }
    if (b.eventTime !== undefined && b.schema[b.eventTime] !== undefined && !isTimestampType(b.schema[b.eventTime])) {
      ctx.addIssue({
        code: "custom",
        path: ["schema", b.eventTime],
        message: `the event-time column must be a timestamp (${TIMESTAMP_TYPES.map((t) => `"${t}"`).join(", ")})`,
      });
    }
  });

export interface StreamConfig {
  key: string[];
  eventTime: string | null;
  mode: Mode;
  /** ms */
  watermarkDelay: number;
  partitions: number;
  watermarkPolicy: "min" | "max";
  schema: Record<string, ColumnType>;
  /** declared sources: their own delay; a disabled source's batches are refused */
  sources: Record<string, { watermarkDelay?: number; disabled?: boolean }>;
  /** ms; rows whose event time is further ahead of now are rejected. */
  maxEventTimeSkew: number;
  limits: { maxBodyBytes: number; maxRows: number };
}

export const DEFAULT_LIMITS = { maxBodyBytes: 10 * 1024 * 1024, maxRows: 10_000 };

export type FieldError = { path: string; message: string };
export type ConfigResult = { ok: true; config: StreamConfig } | { ok: false; errors: FieldError[] };

export function parseStreamConfig(body: unknown): ConfigResult {
  const r = streamBodySchema.safeParse(body);
  if (!r.success) return { ok: false, errors: zodErrors(r.error) };
  const b = r.data;
  return {
    ok: true,
    config: {
      key: b.key,
      eventTime: b.eventTime ?? null,
      mode: b.mode,
      watermarkDelay: b.watermarkDelay ?? 0,
      partitions: b.partitions,
      watermarkPolicy: b.watermarkPolicy,
      schema: b.schema,
      sources: b.sources,
      maxEventTimeSkew: b.maxEventTimeSkew,
      limits: { ...DEFAULT_LIMITS, ...b.limits },
    },
  };
}

export function zodErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message }));
}

/**
 * Fields bound at creation, like a Spark checkpoint's plan: changing them would
 * reinterpret state already stored. How each key column is encoded into the
 * canonical key is bound too (its schema type, a time's unit).
 */
export function boundFieldChanges(old: StreamConfig, next: StreamConfig): string[] {
  const changed: string[] = [];
  if (JSON.stringify(old.key) !== JSON.stringify(next.key)) changed.push("key");
  if (old.mode !== next.mode) changed.push("mode");
  if (old.eventTime !== next.eventTime) changed.push("eventTime");
  if (old.partitions !== next.partitions) changed.push("partitions");
  for (const col of old.key) {
    if (keyEncoding(old, col) !== keyEncoding(next, col)) changed.push(`schema.${col}`);
  }
  return changed;
}

/**
 * How a key column's value enters the canonical key. A time is keyed by its
 * instant in ms; "timestamp" and "timestamp:ms" read every value they both
 * accept alike (the former only refuses implausibly small numbers), so moving
 * between them keeps stored keys valid, while "timestamp:s" reads 1700000000 as
 * another instant. The event-time column's unit is bound only when it is a key
 * column: elsewhere state holds ms already read, and switching a stream to
 * "timestamp:s" is the fix the plausibility rule's message suggests.
 */
function keyEncoding(config: StreamConfig, column: string): string {
  const type = config.schema[column];
  if (column === config.eventTime || isTimestampType(type)) return type === "timestamp:s" ? "instant in s" : "instant in ms";
  return type ?? "as sent";
}

/** The delay that turns a source's max event time into its watermark. */
export function delayOf(config: StreamConfig, source: string): number {
  return config.sources[source]?.watermarkDelay ?? config.watermarkDelay;
}

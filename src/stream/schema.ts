import { delayOf, eventTimeCaps, isTimestampType, type ColumnType, type StreamConfig } from "./config";
import { contentExcludeFor, volatileFor } from "./volatile-fields";
import { conflictBlindFields, contentDigest, contentHash, omissionFrom, type Excluded } from "./content";
import { encodeKey, MAX_KEY_BYTES, type KeyValue } from "./key";
import { own } from "../lib/own";
import { tooDeep } from "../lib/json";
import { rowValueFault } from "./row-values";
import { DECIMAL, MIN_PLAUSIBLE_MS, parseTimestamp, type TimeUnit } from "./timestamp";

export { MIN_PLAUSIBLE_MS, parseIsoTimestamp, parseTimestamp, type TimeUnit } from "./timestamp";

export type Row = Record<string, unknown>;

/** A row that passed validation: its coerced copy, canonical key and event time. */
export interface AcceptedRow {
  index: number;
  row: Row;
  key: string;
  /** epoch ms, or null in `global` mode without an event-time column */
  eventTime: number | null;
  /** an id-keyed stream's content digest of the row (without its volatile fields): a copy with another one is a conflict */
  digest?: string;
}
export interface RejectedRow {
  index: number;
  error: string;
}

class RowError extends Error {}

/**
 * A line of an input file that is not JSON arrives as `{"_corrupt_line": n}`
 * (src/sources/files/parse.ts, Spark's PERMISSIVE mode), or, when it is JSON
 * nested too deep, with `"_corrupt_why": "too-deep"` too: rejected with a
 * reason that names the line, and nothing of its bytes.
 */
export const CORRUPT_LINE = "_corrupt_line";
export const CORRUPT_WHY = "_corrupt_why";
function corruptLineReason(raw: object): string | null {
  const keys = Object.keys(raw);
  const n = (raw as Row)[CORRUPT_LINE];
  if (!Number.isSafeInteger(n) || (n as number) <= 0) return null;
  if (keys.length === 1 && keys[0] === CORRUPT_LINE) return `line ${n} is not valid JSON`;
  if (keys.length === 2 && Object.hasOwn(raw, CORRUPT_WHY) && (raw as Row)[CORRUPT_WHY] === "too-deep") return `line ${n} ${tooDeep()}`;
  return null;
}

/** Epoch seconds at or above this (the year 5138) are milliseconds sent to a "timestamp:s" column. */
export const MAX_PLAUSIBLE_S = 1e11;

const asIso = (ms: number) => (Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : "outside the calendar");
const isNumeric = (value: unknown) => typeof value === "number" || (typeof value === "string" && DECIMAL.test(value.trim()));

/**
 * Reads a time the engine works with (the event time, a time in the key) as
 * epoch ms, by the column's declared type. Numbers where the unit is not
 * declared must be plausible as ms; "timestamp:ms" declares that early dates
 * are meant.
 */
function readInstant(column: string, type: ColumnType | undefined, value: unknown): number {
  const unit: TimeUnit = type === "timestamp:s" ? "s" : "ms";
  const ms = parseTimestamp(value, unit);
  if (ms === null) throw new RowError(`${column}: not a timestamp (ISO-8601 or epoch ${unit === "s" ? "seconds" : "ms"})`);
  if (!isNumeric(value)) return ms;
  if (unit === "s" && Math.abs(ms / 1000) >= MAX_PLAUSIBLE_S) {
    throw new RowError(
      `${column}: the value looks like epoch milliseconds (at or past the year 5138 as seconds), not seconds; declare the column "timestamp:ms" or send seconds`,
    );
  }
  if (type !== "timestamp:s" && type !== "timestamp:ms" && ms < MIN_PLAUSIBLE_MS) {
    throw new RowError(
      `${column}: ${String(value).trim()} looks like epoch seconds, not milliseconds (as ms it is ${asIso(ms)}); ` +
        `declare the column "timestamp:s" or send milliseconds (a column declared "timestamp:ms" accepts dates before 2001-09-09)`,
    );
  }
  return ms;
}

/** Coerces one declared column; throws RowError with the user-facing reason. */
function coerce(column: string, type: ColumnType, value: unknown): unknown {
  const fail = (what: string): never => {
    throw new RowError(`${column}: not ${what}`);
  };
  switch (type) {
    case "string":
      if (typeof value === "string") return value;
      if (typeof value === "number" || typeof value === "boolean") return String(value);
      return fail("a string");
    case "int":
    case "long": {
      const n = typeof value === "string" && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
      if (typeof n !== "number" || !Number.isInteger(n)) return fail(type === "int" ? "an int" : "a long");
      if (type === "int" && (n < -2147483648 || n > 2147483647)) return fail("an int (32-bit range)");
      if (!Number.isSafeInteger(n)) return fail("a long within ±2^53 (send larger ids as strings)");
      return n;
    }
    case "double": {
      const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      if (typeof n !== "number" || !Number.isFinite(n)) return fail("a double");
      return n;
    }
    case "boolean":
      if (typeof value === "boolean") return value;
      if (value === "true" || value === "false") return value === "true";
      return fail("a boolean");
    case "timestamp":
    case "timestamp:ms":
    case "timestamp:s": {
      const unit = type === "timestamp:s" ? "seconds" : "ms";
      if (parseTimestamp(value, type === "timestamp:s" ? "s" : "ms") === null) fail(`a timestamp (ISO-8601 or epoch ${unit})`);
      return value; // kept as sent; the engine reads event times and times in the key with readInstant
    }
  }
}

const encoder = new TextEncoder();

/** Who sent a row and the watermark it is judged by: they set the caps on its event time. */
export interface RowContext {
  source: string;
  /** the global watermark in force; 0 (none yet) applies no cap relative to it */
  watermark: number;
  /** a stream with a table: the columns the table was known to have when the batch began (src/stream/table-fields.ts) */
  tableColumns?: Iterable<string>;
  /** the batch's id: a provider webhook's (`stripe:…`) leaves that provider's volatile fields out of the digest (volatileFor) */
  batchId?: string;
  /** the fields the digest leaves out; absent: digestBlindFields (rowJudge works them out once per batch) */
  blind?: Excluded;
  /** a content key's excluded fields; absent: contentExcludeFor (the stream's, and the provider's by batch id) */
  excluded?: Excluded;
}

/** The fields a row's content digest leaves out: the stream's volatile ones, its provider's (by batch id) and the event time. */
export function digestBlindFields(config: StreamConfig, batchId?: string): readonly string[] {
  return conflictBlindFields({ volatile: volatileFor(config, batchId), eventTime: config.eventTime });
}

/**
 * Validates one row against the stream: schema coercion, key and event time
 * present and well-typed, event time not too far ahead of `now` nor of the
 * watermark (the source's caps, see eventTimeCaps).
 */
export function validateRow(
  config: StreamConfig,
  raw: unknown,
  index: number,
  now: number,
  context: RowContext = { source: "default", watermark: 0 },
): AcceptedRow | RejectedRow {
  return rowJudge(config, now, context)(raw, index);
}

/**
 * validateRow for the rows of one batch: what depends only on the stream, the
 * source and the batch (the declared columns, how each key column is read, the
 * event-time caps, the digest's left-out fields) is worked out once here, not
 * per row; the checks and their order are validateRow's.
 */
export function rowJudge(
  config: StreamConfig,
  now: number,
  context: RowContext = { source: "default", watermark: 0 },
): (raw: unknown, index: number) => AcceptedRow | RejectedRow {
  const schema = Object.entries(config.schema);
  // A time in the key is compared as an instant: "…T10:00:00Z", "…T10:00:00.000Z" and its epoch ms are one key.
  const keyColumns = config.key.map((column) => {
    const type = own(config.schema, column);
    return { column, type, instant: column === config.eventTime || isTimestampType(type) };
  });
  const eventTimeColumn = config.eventTime;
  const eventTimeType = eventTimeColumn === null ? undefined : own(config.schema, eventTimeColumn);
  // The source's caps, read at the first row that gets as far as they are (as validateRow reads them).
  let caps: { skew: number; ahead: number; implied: number } | null = null;
  const capsOf = () => (caps ??= { ...eventTimeCaps(config, context.source), implied: context.watermark + delayOf(config, context.source) });
  const contentKey = Boolean(config.contentKey);
  // The fields the content key or the digest leaves out, as Omissions: read while each row's canonical JSON is written.
  const excluded = config.contentKey ? omissionFrom(context.excluded !== undefined ? context.excluded : contentExcludeFor(config, context.batchId)) : null;
  const blind = contentKey ? null : omissionFrom(context.blind !== undefined ? context.blind : digestBlindFields(config, context.batchId));
  return (raw, index) => {
    try {
      if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new RowError("row is not a JSON object");
      const corrupt = corruptLineReason(raw);
      if (corrupt !== null) throw new RowError(corrupt);
      const row: Row = { ...(raw as Row) };
      for (const [column, type] of schema) {
        const v = own(row, column);
        if (v === undefined || v === null) continue; // absence is checked only for key and event time
        row[column] = coerce(column, type, v);
      }
      const values: KeyValue[] = [];
      for (const { column, type, instant } of keyColumns) {
        const v = own(row, column);
        if (v === undefined || v === null) throw new RowError(`${column}: missing key column`);
        if (typeof v === "object") throw new RowError(`${column}: a key column must be a string, number or boolean`);
        // JSON has no Infinity, but 1e999 parses to it, and the key encoding would turn it into null.
        if (typeof v === "number" && !Number.isFinite(v)) throw new RowError(`${column}: a key value must be a finite number`);
        // Past ±(2^53 − 1) JSON numbers lose digits when parsed: two ids would silently be one key (a string column too).
        const sent = own(raw as Row, column);
        if (!instant && typeof sent === "number" && Number.isInteger(sent) && !Number.isSafeInteger(sent)) {
          throw new RowError(`${column}: a key integer must be within ±(2^53 − 1); larger ones lose digits as JSON numbers, send them as strings`);
        }
        values.push(instant ? readInstant(column, type, v) : (v as KeyValue));
      }
      // A value with no JSON form anywhere (1e999, NaN over RPC) would be written otherwise than it was judged, or not at all.
      const fault = rowValueFault(row);
      if (fault !== null) throw new RowError(fault);
      // A content key: the hash of the row (as coerced) without the excluded fields, as a one-value key.
      const key = contentKey ? encodeKey([contentHash(row, excluded)]) : encodeKey(values);
      if (key.length > MAX_KEY_BYTES / 3 && encoder.encode(key).length > MAX_KEY_BYTES) {
        throw new RowError(`key is longer than ${MAX_KEY_BYTES} bytes`);
      }
      let eventTime: number | null = null;
      if (eventTimeColumn !== null) {
        const v = own(row, eventTimeColumn);
        if (v === undefined || v === null) throw new RowError(`${eventTimeColumn}: missing event time`);
        eventTime = readInstant(eventTimeColumn, eventTimeType, v);
        const caps = capsOf();
        if (eventTime > now + caps.skew) {
          throw new RowError(`${eventTimeColumn}: more than ${caps.skew} ms in the future (clock skew guard)`);
        }
        if (context.watermark > 0 && eventTime > caps.implied + caps.ahead) {
          throw new RowError(`${eventTimeColumn}: more than ${caps.ahead} ms ahead of the watermark ${context.watermark} + delay (maxAheadOfWatermark)`);
        }
      }
      if (contentKey) return { index, row, key, eventTime };
      return { index, row, key, eventTime, digest: contentDigest(row, blind) };
    } catch (e) {
      if (e instanceof RowError) return { index, error: e.message };
      throw e;
    }
  };
}

export function isRejected(r: AcceptedRow | RejectedRow): r is RejectedRow {
  return "error" in r;
}

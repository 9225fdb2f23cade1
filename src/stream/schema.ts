import { delayOf, eventTimeCaps, type ColumnType, type StreamConfig } from "./config";
import { encodeKey, MAX_KEY_BYTES, type KeyValue } from "./key";
import { own } from "./own";

export type Row = Record<string, unknown>;

/** A row that passed validation: its coerced copy, canonical key and event time. */
export interface AcceptedRow {
  index: number;
  row: Row;
  key: string;
  /** epoch ms, or null in `global` mode without an event-time column */
  eventTime: number | null;
}
export interface RejectedRow {
  index: number;
  error: string;
}

class RowError extends Error {}

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** ISO-8601 strings or epoch milliseconds (number or digit string) → epoch ms. */
export function parseTimestamp(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? Math.trunc(value) : null;
  if (typeof value !== "string") return null;
  const s = value.trim().toUpperCase().replace(" ", "T");
  if (/^-?\d+$/.test(s)) return parseTimestamp(Number(s));
  const m = ISO_8601.exec(s);
  if (!m) return null;
  // Date.parse rolls 2024-02-30 over into March: refuse dates that do not exist.
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const probe = new Date(Date.UTC(year, month - 1, day));
  if (probe.getUTCFullYear() !== year || probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day) return null;
  // A date-time without an offset is taken as UTC, not the runtime's zone.
  const ms = Date.parse(s.includes("T") && m[4] === undefined ? `${s}Z` : s);
  return Number.isNaN(ms) ? null : ms;
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
      if (parseTimestamp(value) === null) fail("a timestamp (ISO-8601 or epoch ms)");
      return value; // kept as sent; the engine works on the parsed epoch ms
  }
}

const encoder = new TextEncoder();

/** Who sent a row and the watermark it is judged by: they set the caps on its event time. */
export interface RowContext {
  source: string;
  /** the global watermark in force; 0 (none yet) applies no cap relative to it */
  watermark: number;
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
  try {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new RowError("row is not a JSON object");
    const row: Row = { ...(raw as Row) };
    for (const [column, type] of Object.entries(config.schema)) {
      const v = own(row, column);
      if (v === undefined || v === null) continue; // absence is checked only for key and event time
      row[column] = coerce(column, type, v);
    }
    const values: KeyValue[] = config.key.map((column) => {
      const v = own(row, column);
      if (v === undefined || v === null) throw new RowError(`${column}: missing key column`);
      if (typeof v === "object") throw new RowError(`${column}: a key column must be a string, number or boolean`);
      // JSON has no Infinity, but 1e999 parses to it, and the key encoding would turn it into null.
      if (typeof v === "number" && !Number.isFinite(v)) throw new RowError(`${column}: a key value must be a finite number`);
      // A time in the key is compared as an instant: "…T10:00:00Z", "…T10:00:00.000Z" and its epoch ms are one key.
      if (column === config.eventTime || own(config.schema, column) === "timestamp") {
        const ms = parseTimestamp(v);
        if (ms === null) throw new RowError(`${column}: not a timestamp (ISO-8601 or epoch ms)`);
        return ms;
      }
      return v as KeyValue;
    });
    const key = encodeKey(values);
    if (key.length > MAX_KEY_BYTES / 3 && encoder.encode(key).length > MAX_KEY_BYTES) {
      throw new RowError(`key is longer than ${MAX_KEY_BYTES} bytes`);
    }
    let eventTime: number | null = null;
    if (config.eventTime !== null) {
      const v = own(row, config.eventTime);
      if (v === undefined || v === null) throw new RowError(`${config.eventTime}: missing event time`);
      eventTime = parseTimestamp(v);
      if (eventTime === null) throw new RowError(`${config.eventTime}: not a timestamp (ISO-8601 or epoch ms)`);
      const caps = eventTimeCaps(config, context.source);
      if (eventTime > now + caps.skew) {
        throw new RowError(`${config.eventTime}: more than ${caps.skew} ms in the future (clock skew guard)`);
      }
      const implied = context.watermark + delayOf(config, context.source);
      if (context.watermark > 0 && eventTime > implied + caps.ahead) {
        throw new RowError(
          `${config.eventTime}: more than ${caps.ahead} ms ahead of the watermark ${context.watermark} + delay (maxAheadOfWatermark)`,
        );
      }
    }
    return { index, row, key, eventTime };
  } catch (e) {
    if (e instanceof RowError) return { index, error: e.message };
    throw e;
  }
}

export function isRejected(r: AcceptedRow | RejectedRow): r is RejectedRow {
  return "error" in r;
}

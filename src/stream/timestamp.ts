/**
 * Event times as epoch ms. No imports, so that plain Node (the CLI, through
 * src/stream/advisor) can load it as well as the Worker.
 */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Epoch ms below this (2001-09-09T01:46:40Z) are refused where the unit is not
 * declared: such a number is almost always epoch seconds, which read as ms
 * would silently land in January 1970.
 */
export const MIN_PLAUSIBLE_MS = 1e12;

/** What a bare number means in a timestamp column. */
export type TimeUnit = "s" | "ms";

/**
 * ISO-8601 strings, or epoch numbers (number or digit string) in `unit` → epoch ms.
 * Seconds may carry a fraction ("1700000000.25"); milliseconds may not as text.
 */
export function parseTimestamp(value: unknown, unit: TimeUnit = "ms"): number | null {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return null;
    return unit === "s" ? (secondsToMs(String(value)) ?? Math.trunc(value * 1000)) : Math.trunc(value);
  }
  if (typeof value !== "string") return null;
  const s = value.trim().toUpperCase().replace(" ", "T");
  if (unit === "s" && DECIMAL.test(s)) return secondsToMs(s);
  if (/^-?\d+$/.test(s)) return parseTimestamp(Number(s), unit);
  return parseIsoTimestamp(s);
}

/** An ISO-8601 date or date-time → epoch ms; a date-time without an offset is UTC. */
export function parseIsoTimestamp(text: string): number | null {
  const s = text.trim().toUpperCase().replace(" ", "T");
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

export const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** Decimal seconds → ms by digits, not by float multiplication (1.001 s is 1001 ms, not 1000.9999); below 1 ms truncates, as ISO fractions do. */
function secondsToMs(text: string): number | null {
  const m = DECIMAL.exec(text);
  if (!m) return null; // exponent notation: the caller multiplies
  const ms = Number(m[2]) * 1000 + Number((m[3] ?? "").padEnd(3, "0").slice(0, 3));
  return m[1] === "-" && ms !== 0 ? -ms : ms;
}

import { own } from "../lib/own.ts";

/**
 * Spark-style intervals: "10 seconds", "2 hours", "1 hour 30 minutes", "500 ms",
 * or a plain number of milliseconds. Returns milliseconds.
 */
const UNIT_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1_000,
  sec: 1_000,
  secs: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
  week: 604_800_000,
  weeks: 604_800_000,
};

export class IntervalError extends Error {}

/**
 * The longest duration any setting takes (a delay, a timeout, a window): one
 * year. Longer ones are mistakes ("99999999999999 days"), and unbounded ones
 * overflow the arithmetic on event times and expiries that they feed.
 */
const MAX_INTERVAL_DAYS = 365;
export const MAX_INTERVAL_MS = MAX_INTERVAL_DAYS * 86_400_000;

export function parseInterval(input: string | number): number {
  if (typeof input === "number") {
    if (!Number.isFinite(input) || input < 0 || !Number.isInteger(input)) {
      throw new IntervalError("must be a whole, non-negative number of milliseconds");
    }
    if (input > MAX_INTERVAL_MS) throw new IntervalError(`must be at most ${MAX_INTERVAL_DAYS} days (${MAX_INTERVAL_MS} ms)`);
    return input;
  }
  const text = input
    .trim()
    .toLowerCase()
    .replace(/^interval\s+/, "");
  if (/^\d+$/.test(text)) return parseInterval(Number(text));
  const part = /(\d+(?:\.\d+)?)\s*([a-z]+)/g;
  let total = 0;
  let consumed = "";
  for (const m of text.matchAll(part)) {
    // Own properties only: "1 constructor" names no unit.
    const unit = own(UNIT_MS, m[2]);
    if (unit === undefined) throw new IntervalError(`unknown unit "${m[2]}"`);
    total += Number(m[1]) * unit;
    consumed += m[0];
  }
  if (consumed.length === 0 || consumed.replace(/\s+/g, "") !== text.replace(/\s+/g, "")) {
    throw new IntervalError(`"${input}" is not an interval like "10 seconds" or "2 hours"`);
  }
  if (!(total <= MAX_INTERVAL_MS)) throw new IntervalError(`"${input}" is more than ${MAX_INTERVAL_DAYS} days, the longest accepted`);
  return Math.round(total);
}

const FORMAT_UNITS: [number, string][] = [
  [604_800_000, "week"],
  [86_400_000, "day"],
  [3_600_000, "hour"],
  [60_000, "minute"],
  [1_000, "second"],
  [1, "ms"],
];

/**
 * Milliseconds → the interval syntax parseInterval reads, largest units first:
 * 5_400_000 → "1 hour 30 minutes", 900_000 → "15 minutes", 0 → "0 ms".
 */
export function formatInterval(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0 || !Number.isInteger(ms)) throw new IntervalError("must be a whole, non-negative number of milliseconds");
  if (ms === 0) return "0 ms";
  const parts: string[] = [];
  let left = ms;
  for (const [size, name] of FORMAT_UNITS) {
    const n = Math.floor(left / size);
    if (n === 0) continue;
    left -= n * size;
    parts.push(`${n} ${name}${n === 1 || name === "ms" ? "" : "s"}`);
  }
  return parts.join(" ");
}

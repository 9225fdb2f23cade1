import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { IntervalError, MAX_INTERVAL_MS, parseInterval } from "../../../src/stream/interval";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe("parseInterval: Spark-style strings", () => {
  test.each([
    ["10 seconds", 10 * SECOND],
    ["1 second", SECOND],
    ["2 hours", 2 * HOUR],
    ["1 hour", HOUR],
    ["1 day", DAY],
    ["3 days", 3 * DAY],
    ["30 minutes", 30 * MINUTE],
    ["1 minute", MINUTE],
    ["1 hour 30 minutes", HOUR + 30 * MINUTE],
    ["2 days 3 hours 4 minutes 5 seconds 6 ms", 2 * DAY + 3 * HOUR + 4 * MINUTE + 5 * SECOND + 6],
    ["500 ms", 500],
    ["500 milliseconds", 500],
    ["1 millisecond", 1],
    ["interval 5 minutes", 5 * MINUTE],
    ["INTERVAL 5 MINUTES", 5 * MINUTE],
    ["  10 seconds  ", 10 * SECOND],
    ["10seconds", 10 * SECOND],
    ["10 s", 10 * SECOND],
    ["10 sec", 10 * SECOND],
    ["10 secs", 10 * SECOND],
    ["5 m", 5 * MINUTE],
    ["5 min", 5 * MINUTE],
    ["5 mins", 5 * MINUTE],
    ["2 h", 2 * HOUR],
    ["1 d", DAY],
    ["1 week", 7 * DAY],
    ["2 weeks", 14 * DAY],
    ["1.5 hours", HOUR + 30 * MINUTE],
    ["0 seconds", 0],
    ["0", 0],
    ["5000", 5000],
  ])("%j → %d ms", (input, ms) => {
    expect(parseInterval(input)).toBe(ms);
  });
});

describe("parseInterval: numbers are milliseconds", () => {
  test.each([0, 1, 500, 300_000, 86_400_000])("%d", (ms) => {
    expect(parseInterval(ms)).toBe(ms);
  });

  test.each([-1, -300_000, 1.5, 0.1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])("rejects %d", (ms) => {
    expect(() => parseInterval(ms)).toThrow(IntervalError);
    expect(() => parseInterval(ms)).toThrow("must be a whole, non-negative number of milliseconds");
  });
});

describe("parseInterval: rejects garbage", () => {
  test.each([
    "",
    "   ",
    "seconds",
    "interval",
    "ten seconds",
    "-5 seconds",
    "- 5 seconds",
    "-5000",
    "1.5",
    "10 seconds later",
    "10 seconds, 5 minutes",
    "10 seconds garbage",
    "1 0 seconds",
    "1.5.5 hours",
    "5 m s",
    "+5 seconds",
    "5 seconds ago",
    "PT5M",
  ])("%j", (input) => {
    expect(() => parseInterval(input)).toThrow(IntervalError);
  });

  test.each([
    ["10 fortnights", 'unknown unit "fortnights"'],
    ["5 years", 'unknown unit "years"'],
    ["5 months", 'unknown unit "months"'],
    ["3 microseconds", 'unknown unit "microseconds"'],
    ["1 hour 30 parsecs", 'unknown unit "parsecs"'],
  ])("unknown unit %j", (input, message) => {
    expect(() => parseInterval(input)).toThrow(IntervalError);
    expect(() => parseInterval(input)).toThrow(message);
  });

  test("the message names the input", () => {
    expect(() => parseInterval("soon")).toThrow('"soon" is not an interval like "10 seconds" or "2 hours"');
  });
});

describe("parseInterval: at most 365 days (issue 14)", () => {
  test.each([
    ["365 days", 365 * DAY],
    ["52 weeks 1 day", 365 * DAY],
    [365 * DAY, 365 * DAY],
    [String(365 * DAY), 365 * DAY],
  ])("%j is the longest accepted", (input, ms) => {
    expect(parseInterval(input)).toBe(ms);
  });

  test.each([
    "99999999999999 days",
    "366 days",
    "365 days 1 ms",
    `${"9".repeat(400)} days`,
    "53 weeks",
    365 * DAY + 1,
    String(365 * DAY + 1),
    Number.MAX_SAFE_INTEGER,
  ])("%j is refused", (input) => {
    expect(() => parseInterval(input)).toThrow(IntervalError);
    expect(() => parseInterval(input)).toThrow(/365 days/);
  });
});

describe("parseInterval on composed strings", () => {
  // Sums past MAX_INTERVAL_MS (365 days) are refused since issue 14; the property covers both sides of the bound.
  test("a sequence of parts is the sum of its parts, up to 365 days (property)", () => {
    const units = [
      ["days", DAY],
      ["hours", HOUR],
      ["minutes", MINUTE],
      ["seconds", SECOND],
      ["ms", 1],
    ] as const;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 1000 }), fc.constantFrom(...units)), { minLength: 1, maxLength: 5 }), (parts) => {
        const text = parts.map(([n, [unit]]) => `${n} ${unit}`).join(" ");
        const ms = parts.reduce((sum, [n, [, size]]) => sum + n * size, 0);
        if (ms <= MAX_INTERVAL_MS) expect(parseInterval(text)).toBe(ms);
        else expect(() => parseInterval(text)).toThrow(/more than 365 days/);
      }),
      { numRuns: 300 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { StreamConfig } from "../../../src/stream/config";
import { isRejected, MIN_PLAUSIBLE_MS, parseTimestamp, validateRow } from "../../../src/stream/schema";
import { validConfig } from "../stream-config";

const T10 = Date.UTC(2024, 0, 1, 10, 0, 0);
const NOW = Date.UTC(2024, 0, 1, 12, 0, 0);
const SEPT_2001 = Date.UTC(2001, 8, 9, 1, 46, 40);

const config = (body: Record<string, unknown> = {}): StreamConfig =>
  validConfig({ key: ["event_id"], eventTime: "event_ts", watermarkDelay: "5 minutes", ...body });

/** The row's event time, or its rejection reason. */
function read(c: StreamConfig, row: Record<string, unknown>): number | string {
  const r = validateRow(c, { event_id: 1, ...row }, 0, NOW);
  return isRejected(r) ? r.error : r.eventTime!;
}

const seconds = config({ schema: { event_ts: "timestamp:s" } });
const millis = config({ schema: { event_ts: "timestamp:ms" } });
const undeclared = config({});
const plain = config({ schema: { event_ts: "timestamp" } });

test("the plausibility bound is 2001-09-09T01:46:40Z", () => {
  expect(MIN_PLAUSIBLE_MS).toBe(SEPT_2001);
});

describe("parseTimestamp in seconds", () => {
  test.each<[unknown, number]>([
    [1704103200, T10],
    ["1704103200", T10],
    [" 1704103200 ", T10],
    [1704103200.5, T10 + 500],
    ["1704103200.25", T10 + 250],
    [1704103200.001, T10 + 1], // by digits: 1704103200.001 * 1000 is 1704103200000.9998 in floating point
    [1704103200.0019, T10 + 1], // below the millisecond truncates, as ISO fractions do
    ["1704103200.123456789", T10 + 123],
    [0, 0],
    [-1.5, -1500],
    ["-1", -1000],
    ["2024-01-01T10:00:00Z", T10], // ISO text means the same in every unit
  ])("%j → %j", (value, ms) => {
    expect(parseTimestamp(value, "s")).toBe(ms);
  });

  test.each(["", "1.", ".5", "1e9", "yesterday", "1,5"])("garbage %j → null", (value) => {
    expect(parseTimestamp(value, "s")).toBeNull();
  });

  test("whole seconds and their ms agree, by number and by text (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e10, max: 1e10 }), fc.integer({ min: 0, max: 999 }), (s, ms) => {
        const text = `${s}.${String(ms).padStart(3, "0")}`;
        const expected = s < 0 ? s * 1000 - ms : s * 1000 + ms;
        expect(parseTimestamp(text, "s")).toBe(expected);
        expect(parseTimestamp(Number(text), "s")).toBe(expected);
        expect(parseTimestamp(s, "s")).toBe(s * 1000);
      }),
      { numRuns: 500 },
    );
  });
});

describe("event time in a declared unit", () => {
  test("timestamp:s reads numbers and digit strings as seconds", () => {
    expect(read(seconds, { event_ts: 1704103200 })).toBe(T10);
    expect(read(seconds, { event_ts: "1704103200" })).toBe(T10);
    expect(read(seconds, { event_ts: 1704103200.75 })).toBe(T10 + 750);
  });

  test("timestamp:s still takes ISO text", () => {
    expect(read(seconds, { event_ts: "2024-01-01T10:00:00Z" })).toBe(T10);
  });

  test("timestamp:s refuses milliseconds, which it would read as the year 55000", () => {
    expect(read(seconds, { event_ts: T10 })).toBe(
      // Says what is wrong, not the value (issue 14: error texts never quote row bytes).
      `event_ts: the value looks like epoch milliseconds (at or past the year 5138 as seconds), not seconds; declare the column "timestamp:ms" or send seconds`,
    );
    expect(read(seconds, { event_ts: "yesterday" })).toBe("event_ts: not a timestamp (ISO-8601 or epoch seconds)");
  });

  test("the row keeps the value as sent", () => {
    const r = validateRow(seconds, { event_id: 1, event_ts: 1704103200 }, 0, NOW);
    expect(r).toMatchObject({ row: { event_ts: 1704103200 }, eventTime: T10 });
  });

  test("timestamp:ms takes any epoch ms, early dates too", () => {
    expect(read(millis, { event_ts: T10 })).toBe(T10);
    expect(read(millis, { event_ts: 1000 })).toBe(1000);
    expect(read(millis, { event_ts: -1000 })).toBe(-1000);
    expect(read(millis, { event_ts: "1700000000" })).toBe(1_700_000_000);
  });
});

describe("plausibility of an undeclared unit", () => {
  const reason = (value: string, iso: string) =>
    `event_ts: ${value} looks like epoch seconds, not milliseconds (as ms it is ${iso}); ` +
    `declare the column "timestamp:s" or send milliseconds (a column declared "timestamp:ms" accepts dates before 2001-09-09)`;

  for (const [name, c] of [
    ["no schema entry", undeclared],
    ['"timestamp"', plain],
  ] as const) {
    describe(name, () => {
      test("epoch seconds are refused with a reason that says what to do, not read as 1970", () => {
        expect(read(c, { event_ts: 1700000000 })).toBe(reason("1700000000", "1970-01-20T16:13:20.000Z"));
        expect(read(c, { event_ts: "1700000000" })).toBe(reason("1700000000", "1970-01-20T16:13:20.000Z"));
        expect(read(c, { event_ts: 0 })).toBe(reason("0", "1970-01-01T00:00:00.000Z"));
        expect(read(c, { event_ts: -5 })).toBe(reason("-5", "1969-12-31T23:59:59.995Z"));
        expect(read(c, { event_ts: -1e20 })).toBe(reason("-100000000000000000000", "outside the calendar"));
      });

      test("the edge: 10^12 - 1 is refused, 10^12 accepted", () => {
        expect(read(c, { event_ts: MIN_PLAUSIBLE_MS - 1 })).toBe(reason("999999999999", "2001-09-09T01:46:39.999Z"));
        expect(read(c, { event_ts: MIN_PLAUSIBLE_MS })).toBe(MIN_PLAUSIBLE_MS);
        expect(read(c, { event_ts: String(MIN_PLAUSIBLE_MS) })).toBe(MIN_PLAUSIBLE_MS);
      });

      test("ISO text before 2001 is not a unit mistake and is accepted", () => {
        expect(read(c, { event_ts: "1970-01-01T00:00:00Z" })).toBe(0);
        expect(read(c, { event_ts: "1999-12-31" })).toBe(Date.UTC(1999, 11, 31));
      });

      test("refused exactly below 10^12, accepted (as ms) from it (property)", () => {
        fc.assert(
          fc.property(fc.integer({ min: -1e13, max: 1e13 }), fc.boolean(), (n, asText) => {
            const got = read(c, { event_ts: asText ? String(n) : n });
            if (n < MIN_PLAUSIBLE_MS) expect(got).toMatch(/^event_ts: -?\d+ looks like epoch seconds, not milliseconds/);
            else if (n > NOW + 86_400_000) expect(got).toMatch(/clock skew guard/);
            else expect(got).toBe(n);
          }),
          { numRuns: 500 },
        );
      });
    });
  }
});

describe("the same instant in every unit is one event time and one key (property)", () => {
  const keyed = (type: string) => config({ key: ["event_id", "event_ts"], schema: { event_ts: type } });
  test("seconds in timestamp:s, ms in timestamp and timestamp:ms, ISO in all", () => {
    fc.assert(
      fc.property(fc.integer({ min: SEPT_2001 / 1000, max: NOW / 1000 }), fc.integer({ min: 0, max: 999 }), (s, frac) => {
        const ms = s * 1000 + frac;
        const iso = new Date(ms).toISOString();
        const sent: [string, unknown][] = [
          ["timestamp:s", `${s}.${String(frac).padStart(3, "0")}`],
          ["timestamp:s", iso],
          ["timestamp:ms", ms],
          ["timestamp", ms],
          ["timestamp", iso],
        ];
        for (const [type, value] of sent) {
          const r = validateRow(keyed(type), { event_id: 1, event_ts: value }, 0, NOW);
          expect(r).toMatchObject({ eventTime: ms, key: `[1,${ms}]` });
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe("a timestamp key column other than the event time", () => {
  // Such a column is keyed by its instant, so a misread unit would silently split
  // "1700000000" from its ISO spelling: the rule that guards the event time guards it too.
  const keyed = (type: string) => config({ key: ["event_id", "created"], schema: { created: type } });
  const key = (c: StreamConfig, created: unknown) => {
    const r = validateRow(c, { event_id: 1, created, event_ts: T10 }, 0, NOW);
    return isRejected(r) ? r.error : r.key;
  };

  test("undeclared unit: numbers before 2001 are refused", () => {
    expect(key(keyed("timestamp"), 1700000000)).toMatch(/^created: 1700000000 looks like epoch seconds, not milliseconds/);
    expect(key(keyed("timestamp"), T10)).toBe(`[1,${T10}]`);
  });

  test("timestamp:s keys seconds by their instant", () => {
    expect(key(keyed("timestamp:s"), 1704103200)).toBe(`[1,${T10}]`);
    expect(key(keyed("timestamp:s"), "2024-01-01T10:00:00Z")).toBe(`[1,${T10}]`);
  });

  test("timestamp:ms keys early dates", () => {
    expect(key(keyed("timestamp:ms"), 1000)).toBe("[1,1000]");
  });
});

test("a timestamp column the engine does not read is only checked for shape: early dates stay data", () => {
  // Not the event time and not in the key: kept as sent and never read as an instant, so nothing is misread.
  const c = config({ schema: { born: "timestamp", since: "timestamp:s" } });
  const r = validateRow(c, { event_id: 1, event_ts: T10, born: -86_400_000, since: 1700000000 }, 0, NOW);
  expect(r).toMatchObject({ row: { born: -86_400_000, since: 1700000000 } });
  expect(read(c, { event_ts: T10, since: "yesterday" })).toBe("since: not a timestamp (ISO-8601 or epoch seconds)");
});

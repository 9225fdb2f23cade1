import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { StreamConfig } from "../../../src/stream/config";
import { isRejected, parseTimestamp, validateRow, type AcceptedRow, type RejectedRow } from "../../../src/stream/schema";
import { validConfig } from "../stream-config";

const T10 = Date.UTC(2024, 0, 1, 10, 0, 0);
const NOW = Date.UTC(2024, 0, 1, 12, 0, 0);
const DAY = 86_400_000;

const config = (body: Record<string, unknown> = {}): StreamConfig =>
  validConfig({ key: ["event_id"], eventTime: "event_ts", watermarkDelay: "5 minutes", ...body });

function accept(c: StreamConfig, raw: unknown, index = 0, now = NOW): AcceptedRow {
  const r = validateRow(c, raw, index, now);
  if (isRejected(r)) throw new Error(`rejected: ${r.error}`);
  return r;
}

function reject(c: StreamConfig, raw: unknown, index = 0, now = NOW): string {
  const r = validateRow(c, raw, index, now);
  if (!isRejected(r)) throw new Error(`accepted: ${JSON.stringify(r)}`);
  return r.error;
}

/**
 * "No zone = UTC" must not depend on the process's zone: run the zone-sensitive
 * cases in zones behind and ahead of UTC (Node re-reads process.env.TZ on assignment).
 */
function inZone(zone: string, body: () => void) {
  describe(`in TZ=${zone}`, () => {
    let saved: string | undefined;
    beforeAll(() => {
      saved = process.env.TZ;
      process.env.TZ = zone;
    });
    afterAll(() => {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    });
    test("the zone is in force", () => {
      expect(new Date(T10).getTimezoneOffset()).not.toBe(0);
    });
    body();
  });
}

describe("parseTimestamp", () => {
  for (const zone of ["America/New_York", "Asia/Kolkata"]) {
    inZone(zone, () => {
      test.each([
        ["2024-01-01T10:00:00Z", T10],
        ["2024-01-01T10:00:00z", T10],
        ["2024-01-01T10:00:00.123Z", T10 + 123],
        ["2024-01-01T10:00:00.123456789Z", T10 + 123],
        ["2024-01-01T10:00:00.5Z", T10 + 500],
        ["2024-01-01T10:00Z", T10],
        ["2024-01-01T10:00:00+01:00", T10 - 3_600_000],
        ["2024-01-01T10:00:00+0100", T10 - 3_600_000],
        ["2024-01-01T10:00:00-05:30", T10 + 5.5 * 3_600_000],
        ["2024-01-01T10:00:00-0530", T10 + 5.5 * 3_600_000],
        ["2024-01-01T10:00:00+00:00", T10],
        ["2024-01-01 10:00:00Z", T10],
        ["2024-01-01 10:00:00+01:00", T10 - 3_600_000],
        // no zone: UTC, not the runtime's zone
        ["2024-01-01T10:00:00", T10],
        ["2024-01-01T10:00:00.250", T10 + 250],
        ["2024-01-01T10:00", T10],
        ["2024-01-01 10:00:00", T10],
        ["  2024-01-01T10:00:00  ", T10],
        // date only: midnight UTC
        ["2024-01-01", Date.UTC(2024, 0, 1)],
        ["2024-02-29", Date.UTC(2024, 1, 29)],
      ])("%j", (text, ms) => {
        expect(parseTimestamp(text)).toBe(ms);
      });

      if (zone !== "America/New_York") return;
      test("a lowercase 't' separator without a zone is UTC too, not the runtime's zone", () => {
        // Regression: "t" once passed validation but missed the "no zone, append Z" step.
        expect(parseTimestamp("2024-01-01t10:00:00")).toBe(T10);
        expect(parseTimestamp("2024-01-01t10:00:00")).toBe(parseTimestamp("2024-01-01T10:00:00"));
      });
    });
  }

  test.each([
    [1704103200000, 1704103200000],
    [0, 0],
    [-1000, -1000],
    [1704103200000.9, 1704103200000],
    ["1704103200000", 1704103200000],
    [" 1704103200000 ", 1704103200000],
    ["-1000", -1000],
    ["0", 0],
  ])("epoch ms %j", (value, ms) => {
    expect(parseTimestamp(value)).toBe(ms);
  });

  test.each([
    "",
    "   ",
    "yesterday",
    "now",
    "2024/01/01",
    "01/02/2024",
    "2024-1-1",
    "24-01-01",
    "2024-13-01",
    "2024-01-32",
    "2024-01-01T25:00:00Z",
    "2024-01-01T10:60:00Z",
    "2024-01-01T10:00:61Z",
    "2024-01-01T10:00:00+25:00",
    "2024-01-01T10Z",
    "2024-01-01T10:00:00 Z",
    "2024-01-01T10:00:00UTC",
    "2024-01-01T10:00:00.Z",
    "Mon, 01 Jan 2024 10:00:00 GMT",
    "1e12",
    "12.5",
    "0x10",
    "--5",
  ])("garbage %j → null", (text) => {
    expect(parseTimestamp(text)).toBeNull();
  });

  test.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, true, false, null, undefined, {}, [], [1704103200000]])(
    "non-timestamp value %j → null",
    (value) => {
      expect(parseTimestamp(value)).toBeNull();
    },
  );

  test("impossible calendar dates are rejected, not rolled into the next month", () => {
    // Date.parse in V8 accepts day 1..31 for every month and overflows into the next.
    expect(parseTimestamp("2024-02-30")).toBeNull();
    expect(parseTimestamp("2023-02-29")).toBeNull();
    expect(parseTimestamp("2024-04-31T10:00:00Z")).toBeNull();
    expect(parseTimestamp("2024-02-29")).toBe(Date.UTC(2024, 1, 29));
  });

  test("ISO strings from Date#toISOString round-trip (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }), (ms) => {
        expect(parseTimestamp(new Date(ms).toISOString())).toBe(ms);
        expect(parseTimestamp(String(ms))).toBe(ms);
        expect(parseTimestamp(ms)).toBe(ms);
      }),
      { numRuns: 500 },
    );
  });
});

describe("validateRow: accepted rows", () => {
  const c = config({});

  test("returns the index, a copy of the row, the canonical key and the event time", () => {
    const raw = { event_id: "evt_1", event_ts: "2024-01-01T10:00:00Z", amount: 5, nested: { a: [1] } };
    const r = accept(c, raw, 7);
    expect(r).toEqual({ index: 7, row: raw, key: '["evt_1"]', eventTime: T10, digest: expect.stringMatching(/^-?\d+$/) }); // digest: DESIGN §11
    expect(r.row).not.toBe(raw);
  });

  test("event time as epoch ms (number or digit string)", () => {
    expect(accept(c, { event_id: 1, event_ts: T10 }).eventTime).toBe(T10);
    expect(accept(c, { event_id: 1, event_ts: String(T10) }).eventTime).toBe(T10);
  });

  test("keys keep their JSON type without a schema", () => {
    expect(accept(c, { event_id: 42, event_ts: T10 }).key).toBe("[42]");
    expect(accept(c, { event_id: "42", event_ts: T10 }).key).toBe('["42"]');
    expect(accept(c, { event_id: true, event_ts: T10 }).key).toBe("[true]");
  });

  test("multi-column keys in key order", () => {
    const c2 = config({ key: ["company", "event_id"] });
    expect(accept(c2, { event_id: 42, company: "acme", event_ts: T10 }).key).toBe('["acme",42]');
  });

  test("a key column may be the event-time column: the key holds the instant, the row the value as sent", () => {
    const c2 = config({ key: ["event_id", "event_ts"] });
    const r = accept(c2, { event_id: 1, event_ts: "2024-01-01T10:00:00Z" });
    expect(r.key).toBe(`[1,${T10}]`);
    expect(r.eventTime).toBe(T10);
    expect(r.row.event_ts).toBe("2024-01-01T10:00:00Z");
  });

  test.each([["2024-01-01T10:00:00Z"], ["2024-01-01T10:00:00.000Z"], ["2024-01-01T11:00:00+01:00"], ["2024-01-01T10:00:00"], [T10], [String(T10)]])(
    "one instant, one key: %j",
    (ts) => {
      for (const schema of [{}, { event_ts: "timestamp" }]) {
        expect(accept(config({ key: ["event_id", "event_ts"], schema }), { event_id: 1, event_ts: ts }).key).toBe(`[1,${T10}]`);
      }
    },
  );

  test("a timestamp-typed key column other than the event time is keyed by its instant too", () => {
    const c2 = config({ key: ["event_id", "created"], schema: { created: "timestamp" } });
    const a = accept(c2, { event_id: 1, created: "2024-01-01T10:00:00Z", event_ts: T10 });
    const b = accept(c2, { event_id: 1, created: T10, event_ts: T10 + 1 });
    expect(a.key).toBe(`[1,${T10}]`);
    expect(b.key).toBe(a.key);
    expect(a.row.created).toBe("2024-01-01T10:00:00Z");
  });

  test("an event time in the key that is not a timestamp is rejected", () => {
    const c2 = config({ key: ["event_id", "event_ts"] });
    expect(reject(c2, { event_id: 1, event_ts: "yesterday" })).toBe("event_ts: not a timestamp (ISO-8601 or epoch ms)");
    expect(reject(c2, { event_id: 1 })).toBe("event_ts: missing key column");
  });

  test("global mode without an event-time column ignores timestamps", () => {
    const g = config({ mode: "global", eventTime: undefined, watermarkDelay: undefined });
    expect(accept(g, { event_id: "a" })).toEqual({ index: 0, row: { event_id: "a" }, key: '["a"]', eventTime: null, digest: expect.stringMatching(/^-?\d+$/) });
    expect(accept(g, { event_id: "a", event_ts: "garbage" }).eventTime).toBeNull();
  });

  test("an event time exactly now + maxEventTimeSkew is accepted; one ms more is not", () => {
    expect(accept(c, { event_id: 1, event_ts: NOW + DAY }).eventTime).toBe(NOW + DAY);
    expect(reject(c, { event_id: 1, event_ts: NOW + DAY + 1 })).toBe("event_ts: more than 86400000 ms in the future (clock skew guard)");
  });

  test("the skew guard follows the config", () => {
    const tight = config({ maxEventTimeSkew: "1 minute" });
    expect(accept(tight, { event_id: 1, event_ts: NOW + 60_000 }).eventTime).toBe(NOW + 60_000);
    expect(reject(tight, { event_id: 1, event_ts: NOW + 60_001 })).toBe("event_ts: more than 60000 ms in the future (clock skew guard)");
  });

  test("old event times are accepted (lateness is the dedup step's business)", () => {
    // A bare number before 2001 needs its unit declared (test/unit/stream/timestamp-units.test.ts); ISO text does not.
    expect(accept(config({ schema: { event_ts: "timestamp:ms" } }), { event_id: 1, event_ts: 0 }).eventTime).toBe(0);
    expect(accept(c, { event_id: 1, event_ts: "1970-01-01" }).eventTime).toBe(0);
  });

  test("does not mutate the input row", () => {
    const typed = config({ schema: { event_id: "int", amount: "double" } });
    const raw = { event_id: "42", event_ts: T10, amount: "1.5" };
    const r = accept(typed, raw);
    expect(r.row).toEqual({ event_id: 42, event_ts: T10, amount: 1.5 });
    expect(raw).toEqual({ event_id: "42", event_ts: T10, amount: "1.5" });
  });
});

describe("validateRow: schema coercion", () => {
  const typed = (type: string) => config({ schema: { v: type } });
  const row = (v: unknown) => ({ event_id: 1, event_ts: T10, v });

  test.each<[string, unknown, unknown]>([
    ["int", 42, 42],
    ["int", "42", 42],
    ["int", " 42 ", 42],
    ["int", "-7", -7],
    ["int", 2147483647, 2147483647],
    ["int", -2147483648, -2147483648],
    ["long", 2147483648, 2147483648],
    ["long", "9007199254740991", 9007199254740991],
    ["long", -9007199254740991, -9007199254740991],
    ["double", 1.5, 1.5],
    ["double", 3, 3],
    ["double", "1.5", 1.5],
    ["double", "1e3", 1000],
    ["double", " -2.5 ", -2.5],
    ["boolean", true, true],
    ["boolean", false, false],
    ["boolean", "true", true],
    ["boolean", "false", false],
    ["string", "x", "x"],
    ["string", "", ""],
    ["string", 42, "42"],
    ["string", 1.5, "1.5"],
    ["string", true, "true"],
    ["timestamp", "2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"],
    ["timestamp", T10, T10],
  ])("%s: %j → %j", (type, value, expected) => {
    expect(accept(typed(type), row(value)).row.v).toStrictEqual(expected);
  });

  test.each<[string, unknown, string]>([
    ["int", 4.5, "v: not an int"],
    ["int", "4.5", "v: not an int"],
    ["int", "abc", "v: not an int"],
    ["int", "", "v: not an int"],
    ["int", true, "v: not an int"],
    ["int", [1], "v: not an int"],
    ["int", 2147483648, "v: not an int (32-bit range)"],
    ["int", "-2147483649", "v: not an int (32-bit range)"],
    ["long", 4.5, "v: not a long"],
    ["long", "x", "v: not a long"],
    ["long", 2 ** 53, "v: not a long within ±2^53 (send larger ids as strings)"],
    ["long", "9007199254740993", "v: not a long within ±2^53 (send larger ids as strings)"],
    ["double", "abc", "v: not a double"],
    ["double", "", "v: not a double"],
    ["double", "  ", "v: not a double"],
    ["double", "Infinity", "v: not a double"],
    ["double", true, "v: not a double"],
    ["double", {}, "v: not a double"],
    ["boolean", "TRUE", "v: not a boolean"],
    ["boolean", "yes", "v: not a boolean"],
    ["boolean", 1, "v: not a boolean"],
    ["boolean", 0, "v: not a boolean"],
    ["string", {}, "v: not a string"],
    ["string", ["a"], "v: not a string"],
    ["timestamp", "yesterday", "v: not a timestamp (ISO-8601 or epoch ms)"],
    ["timestamp", true, "v: not a timestamp (ISO-8601 or epoch ms)"],
  ])("%s rejects %j with %j", (type, value, message) => {
    expect(reject(typed(type), row(value))).toBe(message);
  });

  test("a typed column that is absent or null is left alone", () => {
    expect(accept(typed("int"), { event_id: 1, event_ts: T10 }).row).toEqual({ event_id: 1, event_ts: T10 });
    expect(accept(typed("int"), row(null)).row).toEqual({ event_id: 1, event_ts: T10, v: null });
  });

  test("coercion applies before the key is encoded", () => {
    const intKey = config({ schema: { event_id: "int" } });
    expect(accept(intKey, { event_id: "42", event_ts: T10 }).key).toBe("[42]");
    expect(accept(intKey, { event_id: 42, event_ts: T10 }).key).toBe("[42]");
    const stringKey = config({ schema: { event_id: "string" } });
    expect(accept(stringKey, { event_id: 42, event_ts: T10 }).key).toBe('["42"]');
    expect(reject(intKey, { event_id: "evt_1", event_ts: T10 })).toBe("event_id: not an int");
  });
});

describe("validateRow: rejected rows", () => {
  const c = config({});

  test.each([null, 42, "row", true, [], [{ event_id: 1 }]])("non-object row %j", (raw) => {
    expect(validateRow(c, raw, 3, NOW)).toEqual({ index: 3, error: "row is not a JSON object" });
  });

  test("missing or null key", () => {
    expect(reject(c, { event_ts: T10 })).toBe("event_id: missing key column");
    expect(reject(c, { event_id: null, event_ts: T10 })).toBe("event_id: missing key column");
    const c2 = config({ key: ["event_id", "company"] });
    expect(reject(c2, { event_id: 1, event_ts: T10 })).toBe("company: missing key column");
  });

  test("an object or array as a key", () => {
    expect(reject(c, { event_id: { id: 1 }, event_ts: T10 })).toBe("event_id: a key column must be a string, number or boolean");
    expect(reject(c, { event_id: [1], event_ts: T10 })).toBe("event_id: a key column must be a string, number or boolean");
  });

  test("missing, null or malformed event time", () => {
    expect(reject(c, { event_id: 1 })).toBe("event_ts: missing event time");
    expect(reject(c, { event_id: 1, event_ts: null })).toBe("event_ts: missing event time");
    expect(reject(c, { event_id: 1, event_ts: "yesterday" })).toBe("event_ts: not a timestamp (ISO-8601 or epoch ms)");
    expect(reject(c, { event_id: 1, event_ts: true })).toBe("event_ts: not a timestamp (ISO-8601 or epoch ms)");
    const typed = config({ schema: { event_ts: "timestamp" } });
    expect(reject(typed, { event_id: 1, event_ts: "yesterday" })).toBe("event_ts: not a timestamp (ISO-8601 or epoch ms)");
  });

  test("the index is carried", () => {
    expect(validateRow(c, { event_id: 1 }, 9, NOW)).toEqual({ index: 9, error: "event_ts: missing event time" });
  });

  describe("keys over 1 KiB (UTF-8 bytes of the canonical encoding)", () => {
    // encodeKey([s]) = '["' + s + '"]': 4 bytes of framing
    test("ASCII: 1024 bytes accepted, 1025 rejected", () => {
      expect(accept(c, { event_id: "x".repeat(1020), event_ts: T10 }).key).toHaveLength(1024);
      expect(reject(c, { event_id: "x".repeat(1021), event_ts: T10 })).toBe("key is longer than 1024 bytes");
    });

    test("two-byte characters count twice", () => {
      expect(accept(c, { event_id: "é".repeat(510), event_ts: T10 }).key).toBe(`["${"é".repeat(510)}"]`);
      expect(reject(c, { event_id: "é".repeat(511), event_ts: T10 })).toBe("key is longer than 1024 bytes");
    });

    test("three-byte characters: 340 fit, 341 do not", () => {
      expect(accept(c, { event_id: "☃".repeat(340), event_ts: T10 }).eventTime).toBe(T10);
      expect(reject(c, { event_id: "☃".repeat(341), event_ts: T10 })).toBe("key is longer than 1024 bytes");
    });

    test("four-byte characters: 255 fit, 256 do not", () => {
      expect(accept(c, { event_id: "😀".repeat(255), event_ts: T10 }).eventTime).toBe(T10);
      expect(reject(c, { event_id: "😀".repeat(256), event_ts: T10 })).toBe("key is longer than 1024 bytes");
    });

    test("escapes count as encoded", () => {
      // each '"' is encoded as \" (2 bytes)
      expect(accept(c, { event_id: '"'.repeat(510), event_ts: T10 }).key).toHaveLength(1024);
      expect(reject(c, { event_id: '"'.repeat(511), event_ts: T10 })).toBe("key is longer than 1024 bytes");
    });

    test("the limit is on the whole key, over all columns", () => {
      const c2 = config({ key: ["a", "b"] });
      // '["' + a + '","' + b + '"]' = 7 bytes of framing
      expect(accept(c2, { a: "x".repeat(600), b: "y".repeat(417), event_ts: T10 }).key).toHaveLength(1024);
      expect(reject(c2, { a: "x".repeat(600), b: "y".repeat(418), event_ts: T10 })).toBe("key is longer than 1024 bytes");
    });

    test("rejected exactly when the UTF-8 encoding exceeds 1024 bytes (property)", () => {
      const enc = new TextEncoder();
      fc.assert(
        fc.property(
          fc.oneof(
            fc.string({ unit: "binary", minLength: 200, maxLength: 600 }),
            fc.string({ unit: "grapheme-ascii", minLength: 1000, maxLength: 1030 }),
            fc.string({ unit: fc.constantFrom("a", "é", "☃", "😀", '"'), minLength: 250, maxLength: 1030 }),
          ),
          (id) => {
            const bytes = enc.encode(JSON.stringify([id])).length;
            const r = validateRow(c, { event_id: id, event_ts: T10 }, 0, NOW);
            expect(isRejected(r)).toBe(bytes > 1024);
            if (isRejected(r)) expect((r as RejectedRow).error).toBe("key is longer than 1024 bytes");
          },
        ),
        { numRuns: 400 },
      );
    });
  });
});

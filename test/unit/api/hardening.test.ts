import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { parseRows } from "../../../src/http/body";
import { parseSignature, SIGNATURE_TOLERANCE_S, withinReplayWindow } from "../../../src/api/signature";
import { TtlCache } from "../../../src/api/ttl-cache";
import type { StreamConfig } from "../../../src/stream/config";
import { capRejected, MAX_REJECTED_LISTED, rejectedTotal } from "../../../src/stream/batch-outcome";
import { validateRow } from "../../../src/stream/schema";
import { globalWatermark } from "../../../src/stream/watermark";
import { validConfig } from "../stream-config";

const config = (body: Record<string, unknown> = {}): StreamConfig => validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", ...body });

describe("bounded caches", () => {
  test("hold at most maxEntries, dropping the least recently used", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.string({ maxLength: 3 })), { maxLength: 200 }), (ops) => {
        const cache = new TtlCache<number>(8, 1_000);
        const model: string[] = []; // most recent last
        for (const [isSet, key] of ops) {
          if (isSet) {
            cache.set(key, 1, 0);
            if (model.includes(key)) model.splice(model.indexOf(key), 1);
            model.push(key);
            if (model.length > 8) model.shift();
          } else if (cache.get(key, 0) !== undefined) {
            model.splice(model.indexOf(key), 1);
            model.push(key);
          }
          expect(cache.size).toBeLessThanOrEqual(8);
        }
        for (const k of model) expect(cache.get(k, 0)).toBe(1);
      }),
    );
  });

  test("forget entries past their age", () => {
    const cache = new TtlCache<string>(4, 100);
    cache.set("a", "x", 0);
    expect(cache.get("a", 100)).toBe("x");
    expect(cache.get("a", 50, 10)).toBeUndefined(); // younger-than asked for: miss, but kept
    expect(cache.get("a", 101)).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});

describe("the signature window", () => {
  const now = 1_800_000_000_000;
  test("is ±300 s, inclusive, on both sides", () => {
    const t = now / 1000;
    expect(SIGNATURE_TOLERANCE_S).toBe(300);
    for (const [offset, ok] of [
      [-301, false],
      [-300, true],
      [-299, true],
      [299, true],
      [300, true],
      [301, false],
    ] as const) {
      expect(withinReplayWindow(t + offset, now), `offset ${offset}`).toBe(ok);
    }
  });

  test("headers carry v1 and v2 values", () => {
    expect(parseSignature("t=5,v2=AB,v1=cd")).toEqual({ t: 5, v1: ["cd"], v2: ["ab"] });
    expect(() => parseSignature("t=5")).toThrow(/t=<unix seconds>/);
    expect(() => parseSignature("v2=ab")).toThrow();
  });
});

describe("parsing stops at the row limit", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  test("NDJSON: lines past maxRows are never parsed", () => {
    expect(() => parseRows(enc('{"a":1}\n{"a":2}\n{broken'), "application/x-ndjson", 2)).toThrow(/more than 2 rows/);
    expect(parseRows(enc('{"a":1}\n\n{"a":2}\n'), "application/x-ndjson", 2)).toHaveLength(2);
  });
  test("JSON arrays: counted after parsing", () => {
    expect(() => parseRows(enc("[1,2,3]"), "application/json", 2)).toThrow(/has 3 rows; this stream accepts at most 2/);
  });
});

describe("rejected rows in records", () => {
  test("at most MAX_REJECTED_LISTED are listed; the total is kept", () => {
    fc.assert(
      fc.property(fc.nat({ max: 400 }), (n) => {
        const rejected = Array.from({ length: n }, (_, index) => ({ index, error: "x" }));
        const capped = capRejected({ input: n, emitted: 0, duplicates: 0, late: 0, rejected });
        expect(capped.rejected.length).toBe(Math.min(n, MAX_REJECTED_LISTED));
        expect(rejectedTotal(capped)).toBe(n);
        expect("rejectedCount" in capped).toBe(n > MAX_REJECTED_LISTED);
      }),
    );
  });
});

describe("names from Object.prototype", () => {
  test("a declared source that has not sent counts as 0, whatever its name", () => {
    for (const name of ["constructor", "valueOf", "toString", "hasOwnProperty"]) {
      const c = config({ sources: { [name]: {}, other: {} } });
      expect(globalWatermark(c, { other: { maxEventTime: 10 * 60_000 + 5, lastBatchAt: 1 } }, 0)).toBe(0);
      expect(globalWatermark(c, {}, 7)).toBe(7);
    }
  });

  test("key and event-time columns are read from the row itself", () => {
    const c = config({ key: ["constructor"], eventTime: "valueOf" });
    expect(validateRow(c, {}, 0, 0)).toEqual({ index: 0, error: "constructor: missing key column" });
    expect(validateRow(c, { constructor: "k" }, 0, 0)).toEqual({ index: 0, error: "valueOf: missing event time" });
    const t = Date.UTC(2024, 0, 1);
    expect(validateRow(c, { constructor: "k", valueOf: t }, 0, t)).toMatchObject({ key: '["k"]', eventTime: t });
  });

  test("non-finite numbers are no key value", () => {
    const c = config({});
    for (const id of [Infinity, -Infinity, NaN])
      expect(validateRow(c, { id, ts: 1 }, 0, 0)).toMatchObject({ error: "id: a key value must be a finite number" });
  });
});

describe("event-time caps per source", () => {
  const c = config({
    sources: { partner: { maxEventTimeSkew: "1 minute", maxAheadOfWatermark: "1 hour" } },
    maxEventTimeSkew: "1 day",
  });
  const now = 1_800_000_000_000;
  test("ahead of the clock: the source's cap, else the stream's", () => {
    expect(validateRow(c, { id: "a", ts: now + 60_000 }, 0, now, { source: "partner", watermark: 0 })).not.toHaveProperty("error");
    expect(validateRow(c, { id: "a", ts: now + 60_001 }, 0, now, { source: "partner", watermark: 0 })).toHaveProperty("error");
    expect(validateRow(c, { id: "a", ts: now + 86_400_000 }, 0, now, { source: "other", watermark: 0 })).not.toHaveProperty("error");
  });
  test("ahead of the watermark + delay, once there is a watermark; the cap defaults to the skew cap", () => {
    const wm = now - 86_400_000;
    const edge = wm + 10 * 60_000 + 3_600_000;
    expect(validateRow(c, { id: "a", ts: edge }, 0, now, { source: "partner", watermark: wm })).not.toHaveProperty("error");
    expect(validateRow(c, { id: "a", ts: edge + 1 }, 0, now, { source: "partner", watermark: wm })).toMatchObject({
      error: expect.stringMatching(/ahead of the watermark/),
    });
    expect(validateRow(c, { id: "a", ts: edge + 1 }, 0, now, { source: "partner", watermark: 0 })).not.toHaveProperty("error");
    // other sources: ahead cap = their skew cap (1 day)
    expect(validateRow(c, { id: "a", ts: wm + 10 * 60_000 + 86_400_000 }, 0, now + 86_400_000, { source: "other", watermark: wm })).not.toHaveProperty("error");
    expect(validateRow(c, { id: "a", ts: wm + 10 * 60_000 + 86_400_001 }, 0, now + 86_400_000, { source: "other", watermark: wm })).toHaveProperty("error");
  });
});

import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { applyBatch, expiryOf, isExpired, stateKeyFor, type DedupInput, type DedupSettings } from "../../../src/stream/dedup";

const MIN = 60_000;
const at = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const DELAY = 5 * MIN;

const WW: DedupSettings = { mode: "within-watermark", delay: DELAY, hasEventTime: true };
const ETK: DedupSettings = { mode: "event-time-key", delay: DELAY, hasEventTime: true };
const GLOBAL: DedupSettings = { mode: "global", delay: 0, hasEventTime: false };
const GLOBAL_T: DedupSettings = { mode: "global", delay: DELAY, hasEventTime: true };

const row = (key: string, eventTime: number | null): DedupInput => ({ key: JSON.stringify([key]), eventTime });
const nothing = () => false;

describe("expiryOf", () => {
  test("within-watermark: T_first + delay", () => {
    expect(expiryOf(WW, at(10, 0))).toBe(at(10, 5));
    expect(expiryOf({ ...WW, delay: 0 }, at(10, 0))).toBe(at(10, 0));
  });
  test("event-time-key: T", () => {
    expect(expiryOf(ETK, at(10, 0))).toBe(at(10, 0));
  });
  test("global: never", () => {
    expect(expiryOf(GLOBAL, null)).toBeNull();
    expect(expiryOf(GLOBAL_T, at(10, 0))).toBeNull();
  });
  test("no event time: never", () => {
    expect(expiryOf(WW, null)).toBeNull();
    expect(expiryOf(ETK, null)).toBeNull();
  });
});

describe("isExpired", () => {
  test("evicts at equality: expiresAt == wm", () => {
    expect(isExpired(at(10, 5), at(10, 5))).toBe(true);
  });
  test("evicts below the watermark, keeps above", () => {
    expect(isExpired(at(10, 4), at(10, 5))).toBe(true);
    expect(isExpired(at(10, 5) + 1, at(10, 5))).toBe(false);
  });
  test("null never expires", () => {
    expect(isExpired(null, Number.MAX_SAFE_INTEGER)).toBe(false);
  });
  test("with wm 0 nothing positive expires", () => {
    expect(isExpired(1, 0)).toBe(false);
    expect(isExpired(0, 0)).toBe(true);
  });
});

describe("stateKeyFor", () => {
  test("the key in within-watermark and global modes; key@T in event-time-key mode", () => {
    expect(stateKeyFor(WW, row("A", at(10, 0)))).toBe('["A"]');
    expect(stateKeyFor(GLOBAL_T, row("A", at(10, 0)))).toBe('["A"]');
    expect(stateKeyFor(GLOBAL, row("A", null))).toBe('["A"]');
    expect(stateKeyFor(ETK, row("A", at(10, 0)))).toBe(`["A"]@${at(10, 0)}`);
  });
});

describe("applyBatch: the late filter", () => {
  const wm = at(10, 0);

  test("T < wm and T == wm are late; T == wm + 1 ms is not", () => {
    const r = applyBatch(WW, wm, [row("A", wm - 1), row("B", wm), row("C", wm + 1)], nothing);
    expect(r.decisions).toEqual(["l", "l", "e"]);
    expect(r.inserts).toEqual([{ stateKey: '["C"]', eventTime: wm + 1, expiresAt: wm + 1 + DELAY }]);
  });

  test.each([ETK, GLOBAL_T])("applies in mode %o", (settings) => {
    expect(applyBatch(settings, wm, [row("A", wm), row("B", wm + 1)], nothing).decisions).toEqual(["l", "e"]);
  });

  test("runs before the dedup check: a late copy of a remembered key is late, not a duplicate", () => {
    const r = applyBatch(WW, wm, [row("A", wm - MIN)], (k) => k === '["A"]');
    expect(r.decisions).toEqual(["l"]);
  });

  test("a late copy does not claim the key: a later on-time copy in the same batch is emitted", () => {
    const r = applyBatch(WW, wm, [row("A", wm - MIN), row("A", wm + MIN)], nothing);
    expect(r.decisions).toEqual(["l", "e"]);
    expect(r.inserts).toEqual([{ stateKey: '["A"]', eventTime: wm + MIN, expiresAt: wm + MIN + DELAY }]);
  });

  test("global mode without an event-time column has no late rows", () => {
    const r = applyBatch(GLOBAL, Number.MAX_SAFE_INTEGER, [row("A", null), row("A", null), row("B", null)], nothing);
    expect(r.decisions).toEqual(["e", "d", "e"]);
    expect(r.inserts).toEqual([
      { stateKey: '["A"]', eventTime: null, expiresAt: null },
      { stateKey: '["B"]', eventTime: null, expiresAt: null },
    ]);
  });

  test("watermark 0 makes nothing late after the epoch", () => {
    expect(applyBatch(WW, 0, [row("A", 1), row("B", 0)], nothing).decisions).toEqual(["e", "l"]);
  });
});

describe("applyBatch: which copy survives", () => {
  test("the first in processing order, not the earliest event time", () => {
    const r = applyBatch(WW, 0, [row("A", at(10, 5)), row("A", at(10, 1)), row("A", at(10, 9))], nothing);
    expect(r.decisions).toEqual(["e", "d", "d"]);
    // T_first is the emitted copy's: later copies do not extend or shorten the expiry
    expect(r.inserts).toEqual([{ stateKey: '["A"]', eventTime: at(10, 5), expiresAt: at(10, 10) }]);
  });

  test("duplicates within a batch, interleaved keys", () => {
    const rows = [row("A", at(10, 0)), row("B", at(10, 0)), row("A", at(10, 1)), row("C", at(10, 2)), row("B", at(10, 3)), row("C", at(10, 2))];
    const r = applyBatch(WW, 0, rows, nothing);
    expect(r.decisions).toEqual(["e", "e", "d", "e", "d", "d"]);
    expect(r.inserts.map((i) => i.stateKey)).toEqual(['["A"]', '["B"]', '["C"]']);
  });

  test("a remembered key is a duplicate", () => {
    const remembered = new Set(['["A"]']);
    const r = applyBatch(WW, 0, [row("A", at(10, 0)), row("B", at(10, 0))], (k) => remembered.has(k));
    expect(r.decisions).toEqual(["d", "e"]);
    expect(r.inserts.map((i) => i.stateKey)).toEqual(['["B"]']);
  });

  test("event-time-key: the same key at another time is another event", () => {
    const r = applyBatch(ETK, 0, [row("A", at(10, 0)), row("A", at(10, 1)), row("A", at(10, 0))], nothing);
    expect(r.decisions).toEqual(["e", "e", "d"]);
    expect(r.inserts).toEqual([
      { stateKey: `["A"]@${at(10, 0)}`, eventTime: at(10, 0), expiresAt: at(10, 0) },
      { stateKey: `["A"]@${at(10, 1)}`, eventTime: at(10, 1), expiresAt: at(10, 1) },
    ]);
  });

  test("event-time-key: remembered state keys carry the time", () => {
    const remembered = new Set([`["A"]@${at(10, 0)}`]);
    const r = applyBatch(ETK, 0, [row("A", at(10, 0)), row("A", at(10, 1))], (k) => remembered.has(k));
    expect(r.decisions).toEqual(["d", "e"]);
  });

  test("global mode with an event time: the key alone, kept forever", () => {
    const r = applyBatch(GLOBAL_T, 0, [row("A", at(10, 0)), row("A", at(12, 0))], nothing);
    expect(r.decisions).toEqual(["e", "d"]);
    expect(r.inserts).toEqual([{ stateKey: '["A"]', eventTime: at(10, 0), expiresAt: null }]);
  });

  test("an empty batch", () => {
    expect(applyBatch(WW, 0, [], nothing)).toEqual({ decisions: [], inserts: [] });
  });
});

describe("applyBatch (property)", () => {
  const settings = fc.constantFrom(WW, ETK, GLOBAL_T, { ...WW, delay: 0 });
  const rows = fc.array(
    fc.record({ key: fc.constantFrom("A", "B", "C"), t: fc.integer({ min: 0, max: 20 }) }).map(({ key, t }) => row(key, at(10, t))),
    { maxLength: 20 },
  );

  test("late iff T <= wm; the first non-late copy of each state key not remembered is emitted, the rest are duplicates", () => {
    fc.assert(
      fc.property(settings, fc.integer({ min: 0, max: 20 }), rows, fc.subarray(["A", "B", "C"]), (s, w, input, rememberedKeys) => {
        const wm = at(10, w);
        const stateKey = (r: DedupInput) => (s.mode === "event-time-key" ? `${r.key}@${r.eventTime}` : r.key);
        const remembered = new Set(input.filter((r) => rememberedKeys.includes(JSON.parse(r.key)[0])).map(stateKey));
        const { decisions, inserts } = applyBatch(s, wm, input, (k) => remembered.has(k));

        const expected: string[] = [];
        const expectedInserts: unknown[] = [];
        const claimed = new Set(remembered);
        for (const r of input) {
          if (r.eventTime! <= wm) expected.push("l");
          else if (claimed.has(stateKey(r))) expected.push("d");
          else {
            claimed.add(stateKey(r));
            expected.push("e");
            const expiresAt = s.mode === "within-watermark" ? r.eventTime! + s.delay : s.mode === "event-time-key" ? r.eventTime : null;
            expectedInserts.push({ stateKey: stateKey(r), eventTime: r.eventTime, expiresAt });
          }
        }
        expect(decisions).toEqual(expected);
        expect(inserts).toEqual(expectedInserts);
      }),
      { numRuns: 500 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { advise } from "../../../../src/stream/advisor/index.ts";
import type { HistoryEvent } from "../../../../src/stream/advisor/history.ts";
import { measure } from "../../../../src/stream/advisor/measure.ts";
import { exactQuantile } from "../../../../src/stream/advisor/sketch.ts";
import {
  DEFAULT_BYTES_PER_KEY,
  estimateState,
  FRIENDLY_DELAYS,
  friendlyCeil,
  MIN_SAMPLE,
  recommendDelay,
  sampleCaveat,
  simulate,
  type Simulation,
} from "../../../../src/stream/advisor/recommend.ts";
import { formatInterval, parseInterval } from "../../../../src/stream/interval.ts";
import { generateHistory } from "../../history-gen.ts";

const BASE = Date.parse("2026-11-29T00:00:00Z");
const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const ev = (key: string, seconds: number, source = "default"): HistoryEvent => ({ key, time: BASE + seconds * S, source });

describe("formatInterval and friendly delays", () => {
  test("the README's interval syntax, read back by parseInterval", () => {
    expect([15 * MIN, 2 * H, S, H + 30 * MIN, 7 * 86_400_000, 500, 0].map(formatInterval)).toEqual([
      "15 minutes",
      "2 hours",
      "1 second",
      "1 hour 30 minutes",
      "1 week",
      "500 ms",
      "0 ms",
    ]);
    fc.assert(fc.property(fc.nat(10 * 7 * 86_400_000), (ms) => parseInterval(formatInterval(ms)) === ms));
  });

  test("friendlyCeil: the smallest friendly delay at or above, at least 1 second, whole weeks past one", () => {
    expect([0, 1, S, S + 1, 14 * MIN + 24 * S, 2 * H, 2 * H + 1, 13 * H, 8 * 86_400_000].map(friendlyCeil)).toEqual([
      S,
      S,
      S,
      2 * S,
      15 * MIN,
      2 * H,
      3 * H,
      86_400_000,
      14 * 86_400_000,
    ]);
    fc.assert(
      fc.property(fc.nat(30 * 86_400_000), (ms) => {
        const d = friendlyCeil(ms);
        expect(d).toBeGreaterThanOrEqual(ms);
        const below = [...FRIENDLY_DELAYS].reverse().find((f) => f < d);
        if (below !== undefined && d <= FRIENDLY_DELAYS[FRIENDLY_DELAYS.length - 1]) expect(below).toBeLessThan(ms);
      }),
    );
  });
});

/** The gaps and the disorder of a history, every value, sorted. */
function exactFigures(events: readonly HistoryEvent[]) {
  const first = new Map<string, number>();
  const max = new Map<string, number>();
  const gaps: number[] = [];
  const disorder: number[] = [];
  for (const e of events) {
    if (first.has(e.key)) gaps.push(Math.abs(e.time - first.get(e.key)!));
    else first.set(e.key, e.time);
    disorder.push(Math.max(0, (max.get(e.source) ?? e.time) - e.time));
    max.set(e.source, Math.max(max.get(e.source) ?? e.time, e.time));
  }
  return { gaps: gaps.sort((a, b) => a - b), disorder: disorder.sort((a, b) => a - b) };
}

describe("recommendDelay", () => {
  test("copies 12 minutes apart, in order: 12 min × 1.2 = 14.4 min → 15 minutes", () => {
    const events: HistoryEvent[] = [];
    for (let i = 0; i < 100; i++) events.push(ev(`k${i}`, i * 60), ev(`k${i}`, i * 60 + 12 * 60));
    events.sort((a, b) => a.time - b.time);
    const r = recommendDelay(measure(events));
    expect(r).toMatchObject({ watermarkDelay: "15 minutes", delayMs: 15 * MIN, gapP999: 12 * MIN, disorderP999: 0, basis: "duplicate gaps" });
  });

  test("exactly on a friendly value stays there: 100 min × 1.2 = 2 hours", () => {
    const r = recommendDelay(measure([ev("a", 0), ev("a", 6000)]));
    expect(r).toMatchObject({ neededMs: 2 * H, watermarkDelay: "2 hours" });
  });

  test("disorder sets it when it is larger; the margin is a parameter", () => {
    const r = recommendDelay(measure([ev("a", 1000), ev("b", 1000 - 50 * 60), ev("a", 1010)]), 1.5);
    expect(r).toMatchObject({ basis: "disorder", disorderP999: 50 * MIN, neededMs: 75 * MIN, watermarkDelay: "2 hours" });
  });

  test("nothing to cover: 1 second", () => {
    expect(recommendDelay(measure([ev("a", 1), ev("b", 2)])).watermarkDelay).toBe("1 second");
  });

  test('a small sample says so next to the number (#15: "1 second" from 2 rows)', () => {
    const tiny = recommendDelay(measure([ev("a", 1), ev("b", 2)]));
    expect(tiny.sample).toEqual({ gaps: 0, events: 2 });
    expect(tiny.caveat).toMatch(/^small sample: read from 2 events and 0 duplicate gaps; a p99\.9 needs about 1,000 of each/);
    const events: HistoryEvent[] = [];
    for (let i = 0; i < MIN_SAMPLE; i++) events.push(ev(`k${i}`, i), ev(`k${i}`, i + 30));
    events.sort((a, b) => a.time - b.time);
    const big = recommendDelay(measure(events));
    expect(big.sample.gaps).toBe(MIN_SAMPLE);
    expect(big.caveat).toBeNull();
    expect(sampleCaveat(MIN_SAMPLE - 1, MIN_SAMPLE)).not.toBeNull();
  });

  test("always covers both p99.9 figures × margin, rounded up to the smallest friendly delay", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e6 }),
        fc.double({ min: 1, max: 3, noNaN: true }),
        fc.integer({ min: 1_000, max: 10 * MIN }),
        (seed, margin, gapMean) => {
          const events = generateHistory({ seed, events: 300, resend: 0.3, gapMean }).map((r) => ({ key: r.id, time: Date.parse(r.ts), source: r.src }));
          const r = recommendDelay(measure(events), margin);
          const { gaps, disorder } = exactFigures(events);
          const p999 = Math.max(exactQuantile(gaps, 0.999) ?? 0, exactQuantile(disorder, 0.999) ?? 0);
          expect(r.delayMs).toBeGreaterThanOrEqual(p999 * margin);
          expect(r.delayMs).toBe(friendlyCeil(r.neededMs));
          expect(parseInterval(r.watermarkDelay)).toBe(r.delayMs);
        },
      ),
      { numRuns: 40 },
    );
  });

  test("refuses a margin below 1", () => {
    expect(() => recommendDelay(measure([]), 0.5)).toThrow(RangeError);
  });
});

/**
 * The within-watermark rules as literally as they read, O(n²): the watermark
 * before row i from all rows before it; a row is a duplicate when the last
 * emitted row of its key is not yet evicted (wm < T_first + delay).
 */
function bruteForce(events: readonly HistoryEvent[], delay: number): Omit<Simulation, "delayMs" | "caughtShare" | "letThroughShare" | "lateShare"> {
  const wmBefore: number[] = [];
  let wm = 0;
  for (let i = 0; i < events.length; i++) {
    wmBefore.push(wm);
    const maxBySource = new Map<string, number>();
    for (const e of events.slice(0, i + 1)) maxBySource.set(e.source, Math.max(maxBySource.get(e.source) ?? -Infinity, e.time));
    wm = Math.max(wm, Math.min(...maxBySource.values()) - delay);
  }
  const emitted: number[] = [];
  const r = { rows: events.length, emitted: 0, copies: 0, caught: 0, lateCopies: 0, letThrough: 0, late: 0 };
  events.forEach((e, i) => {
    const copy = events.slice(0, i).some((o) => o.key === e.key);
    if (copy) r.copies++;
    if (e.time <= wmBefore[i]) {
      r.late++;
      if (copy) r.lateCopies++;
      return;
    }
    const last = emitted.filter((j) => events[j].key === e.key).pop();
    if (last !== undefined && wmBefore[i] < events[last].time + delay) r.caught++;
    else {
      emitted.push(i);
      if (copy) r.letThrough++;
    }
  });
  r.emitted = emitted.length;
  return r;
}

describe("simulate: the history under one delay", () => {
  test("a worked example with a delay of 10 s", () => {
    // a@100 emit (wm → 90); b@95 emit; a@105 caught (wm → 95); c@94 late; a@125 caught (wm → 115);
    // a@126 emitted again: 115 ≥ 100 + 10 evicted it (wm → 116); b@200 emitted again (wm → 190); b@150 late
    const events = [ev("a", 100), ev("b", 95), ev("a", 105), ev("c", 94), ev("a", 125), ev("a", 126), ev("b", 200), ev("b", 150)];
    const s = simulate(events, 10 * S);
    expect(s).toMatchObject({ rows: 8, emitted: 4, copies: 5, caught: 2, letThrough: 2, lateCopies: 1, late: 2 });
    expect([s.caughtShare, s.letThroughShare, s.lateShare]).toEqual([2 / 5, 2 / 5, 2 / 8]);
  });

  test("sources: the slowest holds the watermark back (policy min), and it never decreases", () => {
    // x@100 → wm 90; y@50 joins: min would be 40, but wm stays 90; x@85 is late; y@200 → min(100,200) − 10 = 90
    const s = simulate([ev("a", 100, "x"), ev("b", 50, "y"), ev("c", 85, "x"), ev("d", 95, "y")], 10 * S);
    expect(s.late).toBe(2); // y@50 is late too: 50 ≤ 90
  });

  test("agrees with the brute-force model on random small histories", () => {
    const event = fc.record({
      key: fc.constantFrom("a", "b", "c", "d", "e"),
      time: fc.integer({ min: 1, max: 60 }).map((s) => BASE + s * S),
      source: fc.constantFrom("x", "y", "z"),
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), fc.integer({ min: 0, max: 30 }), (events, delaySeconds) => {
        const got = simulate(events, delaySeconds * S);
        expect(got).toMatchObject(bruteForce(events, delaySeconds * S));
        expect(got.caught + got.lateCopies + got.letThrough).toBe(got.copies);
        expect(got.emitted + got.caught + got.late).toBe(got.rows);
      }),
      { numRuns: 500 },
    );
  });

  test("a longer delay never lets more copies through on a history in one source", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e6 }), (seed) => {
        const events = generateHistory({ seed, events: 300, resend: 0.3, sources: { only: 10_000 } }).map((r) => ({
          key: r.id,
          time: Date.parse(r.ts),
          source: r.src,
        }));
        const short = simulate(events, 10 * S);
        const long = simulate(events, 10 * MIN);
        expect(long.letThrough).toBeLessThanOrEqual(short.letThrough);
        expect(long.late).toBeLessThanOrEqual(short.late);
      }),
      { numRuns: 20 },
    );
  });
});

describe("estimateState", () => {
  test("rate × 2 × delay, rate × delay, and new keys per day, at the bytes per key given", () => {
    // 3,601 events over 1 hour: 1.0003 events/s; 3,000 distinct keys
    const events: HistoryEvent[] = [];
    for (let i = 0; i <= 3600; i++) events.push(ev(`k${i % 3000}`, i));
    const st = estimateState(measure(events), 10 * MIN);
    expect(st.bytesPerKey).toBe(DEFAULT_BYTES_PER_KEY);
    expect(st.ratePerSecond).toBeCloseTo(3601 / 3600, 6);
    expect(st.withinWatermark).toEqual({ keys: 1200, bytes: 1200 * 50 });
    expect(st.eventTimeKey).toEqual({ keys: 600, bytes: 600 * 50 });
    expect(st.global).toEqual({ keysPerDay: 72_000, bytesPerDay: 72_000 * 50 });
    expect(estimateState(measure(events), 10 * MIN, 100).withinWatermark!.bytes).toBe(120_000);
  });

  test("a history without a span of event time has no rate", () => {
    expect(estimateState(measure([ev("a", 5), ev("b", 5)]), MIN)).toMatchObject({ ratePerSecond: null, withinWatermark: null });
  });
});

describe("advise: rows in, figures out", () => {
  test("on a generated history the recommendation catches the copies and few rows are late", () => {
    const rows = generateHistory({ seed: 7, events: 5_000 });
    const { advice } = advise(() => rows, { key: ["id"], time: "ts", source: "src" });
    expect(advice.events).toBe(rows.length);
    expect(advice.distinctKeys).toBe(5_000);
    expect(advice.duplicateRate).toBeCloseTo((rows.length - 5_000) / rows.length, 10);
    expect(Object.keys(advice.disorder.sources).sort()).toEqual(["batch", "mobile", "web"]);
    expect(advice.simulation.copies).toBe(advice.duplicates);
    expect(advice.simulation.caughtShare).toBeGreaterThan(0.99);
    expect(advice.simulation.lateShare).toBeLessThan(0.005);
    expect(JSON.parse(JSON.stringify(advice))).toEqual(advice);
  });
});

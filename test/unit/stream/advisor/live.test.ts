import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { advise } from "../../../../src/stream/advisor/index.ts";
import {
  emptyFigures,
  figuresFromJson,
  figuresToJson,
  LIVE_SKETCH_BUCKETS,
  liveAdvice,
  mergeFigures,
  observeBatch,
  type LiveFigures,
} from "../../../../src/stream/advisor/live.ts";
import { QuantileSketch } from "../../../../src/stream/advisor/sketch.ts";
import { dedupSettings } from "../../../../src/stream/batch.ts";
import { stateKeyFor } from "../../../../src/stream/dedup.ts";
import { own } from "../../../../src/lib/own.ts";
import { Pipeline } from "../../pipeline.ts";
import { validConfig } from "../../stream-config.ts";

const BASE = Date.parse("2026-11-29T00:00:00Z");
const S = 1_000;

describe("observeBatch", () => {
  test("disorder against the source's max before the batch and the batch's earlier rows, in order", () => {
    const f = emptyFigures();
    // max before 100 s: 90 → 10 s behind, 120 → 0 (new max), 110 → 10 s, 125 → 0
    const after = observeBatch(f, { rows: 4, duplicates: 0 }, { times: [90, 120, 110, 125].map((s) => s * S), gaps: [] }, 100 * S);
    expect(after).toBe(125 * S);
    expect(f.disorder.count).toBe(4);
    expect(f.disorder.zeroCount).toBe(2);
    expect(f.disorder.max).toBe(10 * S);
    // a source's first batch: its first row is in order by definition
    const g = emptyFigures();
    expect(observeBatch(g, { rows: 2, duplicates: 0 }, { times: [50 * S, 40 * S], gaps: [] }, null)).toBe(50 * S);
    expect([g.disorder.zeroCount, g.disorder.max]).toEqual([1, 10 * S]);
  });

  test("counts add up; gaps are taken as distances", () => {
    const f = emptyFigures();
    observeBatch(f, { rows: 3, duplicates: 2 }, { times: [], gaps: [300 * S, -60 * S] }, null);
    observeBatch(f, { rows: 2, duplicates: 1 }, { times: [], gaps: [0] }, null);
    expect([f.rows, f.duplicates, f.gaps.count, f.gaps.zeroCount, f.gaps.min, f.gaps.max]).toEqual([5, 3, 3, 1, 0, 300 * S]);
  });

  test("the sketches stay bounded: the lowest buckets fold, the top quantiles and the max stay", () => {
    const f = emptyFigures();
    // log-uniform from 1 ms to 10¹³ ms: ~1,500 buckets at 1% unbounded
    const gaps = Array.from({ length: 20_000 }, (_, i) => Math.round(Math.pow(10, (13 * i) / 19_999)));
    const whole = new QuantileSketch();
    for (const g of gaps) whole.add(g);
    expect(whole.size).toBeGreaterThan(LIVE_SKETCH_BUCKETS);
    observeBatch(f, { rows: gaps.length, duplicates: gaps.length }, { times: [], gaps }, null);
    expect(f.gaps.size).toBeLessThanOrEqual(LIVE_SKETCH_BUCKETS);
    expect(f.gaps.count).toBe(gaps.length);
    expect(f.gaps.max).toBe(whole.max);
    for (const q of [0.9, 0.99, 0.999]) expect(f.gaps.quantileUpperBound(q)).toBe(whole.quantileUpperBound(q));
    // folded values read as larger, never smaller
    expect(f.gaps.quantile(0.01)!).toBeGreaterThan(whole.quantile(0.01)!);
  });
});

describe("storage form", () => {
  test("JSON round trip, a read-back copy is independent, merge adds", () => {
    const f = emptyFigures();
    observeBatch(f, { rows: 3, duplicates: 1 }, { times: [10 * S, 5 * S, 20 * S], gaps: [7 * S] }, null);
    const back = figuresFromJson(JSON.parse(JSON.stringify(figuresToJson(f))));
    expect(figuresToJson(back)).toEqual(figuresToJson(f));
    const copy = figuresFromJson(figuresToJson(f));
    observeBatch(copy, { rows: 1, duplicates: 1 }, { times: [1], gaps: [1] }, 20 * S);
    expect([f.rows, f.gaps.count, f.disorder.count]).toEqual([3, 1, 3]);
    const m = mergeFigures([f, copy]);
    expect([m.rows, m.duplicates, m.gaps.count, m.disorder.count, m.disorder.max]).toEqual([7, 3, 3, 7, 20 * S - 1]);
  });
});

describe("liveAdvice", () => {
  const config = validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", sources: { slow: { watermarkDelay: "2 hours" } } });

  test("per source with its own delay, and over all of them with the stream's", () => {
    const fast = emptyFigures();
    observeBatch(fast, { rows: 4, duplicates: 1 }, { times: [0, S, 2 * S, 3 * S], gaps: [30 * S] }, null);
    const slow = emptyFigures();
    observeBatch(slow, { rows: 2, duplicates: 1 }, { times: [600 * S, 0], gaps: [5 * 60 * S] }, null);
    const a = liveAdvice(
      new Map([
        ["slow", slow],
        ["fast", fast],
      ]),
      config,
    );
    expect(Object.keys(a.sources)).toEqual(["fast", "slow"]);
    expect(a.sources.fast).toMatchObject({ rows: 4, duplicates: 1, duplicateRate: 0.25, currentDelay: { ms: 600 * S, interval: "10 minutes" } });
    expect(a.sources.slow.currentDelay).toEqual({ ms: 2 * 3600 * S, interval: "2 hours" });
    // fast: the 30 s gap × 1.2 → 36 s → "1 minute"; slow: 600 s behind × 1.2 = 12 min → "15 minutes"
    expect(a.sources.fast.recommendation).toMatchObject({ watermarkDelay: "1 minute", basis: "duplicate gaps" });
    expect(a.sources.slow.recommendation).toMatchObject({ watermarkDelay: "15 minutes", basis: "disorder" });
    expect(a.overall).toMatchObject({ rows: 6, duplicates: 2, currentDelay: { ms: 600 * S } });
    expect(a.overall.recommendation.watermarkDelay).toBe("15 minutes");
    expect(a.overall.gaps.max).toBe(5 * 60 * S);
  });

  test("no figures yet: zeros and the smallest delay; no event time: no current delay", () => {
    const a = liveAdvice(new Map(), validConfig({ key: ["id"], mode: "global" }));
    expect(a.sources).toEqual({});
    expect(a.overall).toMatchObject({ rows: 0, duplicates: 0, duplicateRate: 0, currentDelay: null, recommendation: { delayMs: S } });
  });
});

/**
 * The live path driven from the rows the CLI reads: each run of rows from one
 * source a batch, planned and judged by the service's pure pieces (test/unit/
 * pipeline.ts), a duplicate's gap read from the state as the Partition reads
 * it (after the batch's inserts), the figures observed as the Coordinator
 * does at the commit.
 */
function liveFiguresOf(rows: { id: string; ts: number; src: string }[], batchSizes: number[]): Map<string, LiveFigures> {
  const pipe = new Pipeline({ key: ["id"], eventTime: "ts", mode: "global", watermarkDelay: "365 days", partitions: 3 }, BASE + 365 * 86_400_000);
  const settings = dedupSettings(pipe.config);
  const figures = new Map<string, LiveFigures>();
  let at = 0;
  for (let b = 0; at < rows.length; b++) {
    const src = rows[at].src;
    let end = at + Math.max(1, batchSizes[b % batchSizes.length]);
    for (let i = at + 1; i < end; i++) if (i >= rows.length || rows[i].src !== src) end = i;
    const batch = pipe.begin(src, rows.slice(at, end));
    const gaps: number[] = [];
    for (const [p, sub] of batch.plan.subBatches) {
      pipe.apply(batch, p);
      const codes = batch.decided.get(p)!;
      sub.forEach((r, i) => {
        // a conflict (content differs) is a duplicate by key too (DESIGN §11): its gap counts
        if (codes[i] === "d" || codes[i] === "c") gaps.push(Math.abs(r.eventTime! - pipe.partitions[p].keys.get(stateKeyFor(settings, r))!.eventTime!));
      });
    }
    const maxBefore = own(pipe.wm.sources, src)?.maxEventTime ?? null;
    const { counts } = pipe.commit(batch);
    if (!figures.has(src)) figures.set(src, emptyFigures());
    observeBatch(
      figures.get(src)!,
      { rows: counts.emitted + counts.duplicates + counts.late, duplicates: counts.duplicates },
      { times: batch.plan.eventTimes, gaps },
      maxBefore,
    );
    at = end;
  }
  return figures;
}

describe("live figures = the CLI's over the same rows", () => {
  test("property: the same recommended delay, gaps and disorder", () => {
    const row = fc.record({ key: fc.nat(30), offset: fc.integer({ min: 0, max: 6 * 3600 * S }), src: fc.constantFrom("a", "b", "c") });
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 200 }), fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 5 }), (gen, sizes) => {
        const rows = gen.map((r) => ({ id: `k${r.key}`, ts: BASE + r.offset, src: r.src }));
        const cli = advise(() => rows, { key: ["id"], time: "ts", source: "src" }).advice;
        const live = liveAdvice(liveFiguresOf(rows, sizes), validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes" }));
        expect(live.overall.rows).toBe(cli.events);
        expect(live.overall.duplicates).toBe(cli.duplicates);
        // one sketch per source merged is the CLI's one sketch: the same buckets, so the same figures exactly
        expect(live.overall.recommendation).toEqual(cli.recommendation);
        expect(live.overall.gaps).toEqual(cli.gaps);
        expect(live.overall.disorder).toEqual(cli.disorder.overall);
        for (const [name, d] of Object.entries(cli.disorder.sources)) expect(live.sources[name].disorder).toEqual(d);
      }),
      { numRuns: 200 },
    );
  });

  test("a worked case: copies 5 minutes apart and a source 2 minutes out of order", () => {
    const m = 60 * S;
    const rows = [
      { id: "a", ts: BASE, src: "web" },
      { id: "b", ts: BASE + 1 * m, src: "web" },
      { id: "a", ts: BASE + 5 * m, src: "web" },
      { id: "c", ts: BASE + 10 * m, src: "app" },
      { id: "d", ts: BASE + 8 * m, src: "app" },
      { id: "b", ts: BASE + 6 * m, src: "app" },
    ];
    const live = liveAdvice(liveFiguresOf(rows, [2]), validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "1 minute" }));
    expect(live.sources.web).toMatchObject({ rows: 3, duplicates: 1, gaps: { count: 1, max: 5 * m } });
    expect(live.sources.app).toMatchObject({ rows: 3, duplicates: 1, gaps: { count: 1, max: 5 * m }, disorder: { outOfOrder: 2, max: 4 * m } });
    // 5 min × 1.2 = 6 min → "10 minutes"
    expect(live.overall.recommendation).toMatchObject({ watermarkDelay: "10 minutes", delayMs: 10 * m, basis: "duplicate gaps" });
    expect(live.overall.recommendation).toEqual(advise(() => rows, { key: ["id"], time: "ts", source: "src" }).advice.recommendation);
  });
});

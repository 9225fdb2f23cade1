import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { advanceWatermark, globalWatermark, INITIAL_WATERMARK, sourceWatermark, type WatermarkState } from "../../../src/stream/watermark";
import { validConfig } from "../stream-config";

const MIN = 60_000;
const at = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const NOW = at(13, 0);

const config = (body: Record<string, unknown> = {}): StreamConfig => validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", ...body });

/** Commits one batch per step: [source, max event time of its accepted rows]. */
function run(c: StreamConfig, steps: [string, number | null][], from: WatermarkState = INITIAL_WATERMARK): number[] {
  let s = from;
  return steps.map(([source, maxT]) => {
    s = advanceWatermark(c, s, source, maxT, NOW);
    return s.watermark;
  });
}

describe("the initial state", () => {
  test("starts at 0 with no sources", () => {
    expect(INITIAL_WATERMARK).toEqual({ watermark: 0, sources: {} });
  });
});

describe("sourceWatermark", () => {
  const c = config({ sources: { slow: { watermarkDelay: "1 hour" } } });
  test("is max T minus the source's delay", () => {
    expect(sourceWatermark(c, "a", { maxEventTime: at(10, 10), lastBatchAt: NOW })).toBe(at(10, 5));
    expect(sourceWatermark(c, "slow", { maxEventTime: at(10, 10), lastBatchAt: NOW })).toBe(at(9, 10));
  });
  test("is 0 for a source that has not sent", () => {
    expect(sourceWatermark(c, "slow", undefined)).toBe(0);
    expect(sourceWatermark(c, "a", { maxEventTime: null, lastBatchAt: NOW })).toBe(0);
  });
});

describe("a single source", () => {
  test("wm = max T - delay, and the first batch moves it", () => {
    expect(run(config(), [["s", at(10, 0)]])).toEqual([at(9, 55)]);
  });

  test("a batch with an older max T does not lower max T or the watermark", () => {
    const c = config();
    const s1 = advanceWatermark(c, INITIAL_WATERMARK, "s", at(10, 10), NOW);
    const s2 = advanceWatermark(c, s1, "s", at(10, 1), NOW + 1);
    expect(s2.sources.s).toEqual({ maxEventTime: at(10, 10), lastBatchAt: NOW + 1 });
    expect(s2.watermark).toBe(at(10, 5));
  });

  test("a batch without accepted rows keeps max T and records lastBatchAt", () => {
    const c = config();
    const s1 = advanceWatermark(c, INITIAL_WATERMARK, "s", at(10, 10), NOW);
    const s2 = advanceWatermark(c, s1, "s", null, NOW + 5);
    expect(s2).toEqual({ watermark: at(10, 5), sources: { s: { maxEventTime: at(10, 10), lastBatchAt: NOW + 5 } } });
  });

  test("does not mutate the state it is given", () => {
    const c = config();
    const s1 = advanceWatermark(c, INITIAL_WATERMARK, "s", at(10, 10), NOW);
    const copy = structuredClone(s1);
    advanceWatermark(c, s1, "s", at(11, 0), NOW);
    advanceWatermark(c, s1, "t", at(11, 0), NOW);
    expect(s1).toEqual(copy);
    expect(INITIAL_WATERMARK).toEqual({ watermark: 0, sources: {} });
  });
});

describe("policy", () => {
  const steps: [string, number | null][] = [
    ["a", at(10, 10)], // a: 10:05
    ["b", at(10, 30)], // b: 10:25
    ["a", at(10, 20)], // a: 10:15
    ["b", at(10, 40)], // b: 10:35
  ];

  test("min (the default): the slowest source", () => {
    expect(run(config(), steps)).toEqual([at(10, 5), at(10, 5), at(10, 15), at(10, 15)]);
  });

  test("max: the fastest source", () => {
    expect(run(config({ watermarkPolicy: "max" }), steps)).toEqual([at(10, 5), at(10, 25), at(10, 25), at(10, 35)]);
  });
});

describe("declared sources", () => {
  test("a declared source that never sends holds min at 0", () => {
    const c = config({ sources: { a: {}, quiet: {} } });
    expect(
      run(c, [
        ["a", at(10, 0)],
        ["a", at(11, 0)],
        ["undeclared", at(12, 0)],
      ]),
    ).toEqual([0, 0, 0]);
  });

  test("under max it does not hold the watermark back", () => {
    const c = config({ sources: { a: {}, quiet: {} }, watermarkPolicy: "max" });
    expect(
      run(c, [
        ["a", at(10, 0)],
        ["a", at(11, 0)],
      ]),
    ).toEqual([at(9, 55), at(10, 55)]);
  });

  test("once it sends, it counts with its own watermark", () => {
    const c = config({ sources: { a: {}, b: {} } });
    expect(
      run(c, [
        ["a", at(10, 30)],
        ["b", at(10, 10)],
        ["b", at(10, 50)],
      ]),
    ).toEqual([0, at(10, 5), at(10, 25)]);
  });

  test("a declared source whose batches had no accepted rows still holds min at 0", () => {
    const c = config({ sources: { a: {}, b: {} } });
    expect(
      run(c, [
        ["a", at(10, 30)],
        ["b", null],
        ["b", null],
      ]),
    ).toEqual([0, 0, 0]);
  });
});

describe("disabled sources", () => {
  test("a disabled declared source that never sent does not hold min back", () => {
    const c = config({ sources: { a: {}, retired: { disabled: true } } });
    expect(run(c, [["a", at(10, 10)]])).toEqual([at(10, 5)]);
  });

  test("a source disabled after it sent no longer counts", () => {
    const before = config({ sources: { a: {}, b: {} } });
    const s = advanceWatermark(before, advanceWatermark(before, INITIAL_WATERMARK, "a", at(10, 30), NOW), "b", at(10, 10), NOW);
    expect(s.watermark).toBe(at(10, 5));
    const after = config({ sources: { a: {}, b: { disabled: true } } });
    expect(globalWatermark(after, s.sources, s.watermark)).toBe(at(10, 25));
  });

  test("with every source disabled the watermark stays where it was", () => {
    const c = config({ sources: { a: { disabled: true } } });
    expect(globalWatermark(c, { a: { maxEventTime: at(10, 30), lastBatchAt: NOW } }, at(9, 0))).toBe(at(9, 0));
  });
});

describe("undeclared sources", () => {
  test("join only when they have an accepted row", () => {
    const c = config();
    expect(
      run(c, [
        ["s1", at(10, 10)], // s1 10:05
        ["s2", null], // s2 sent nothing accepted: does not join
        ["s1", at(10, 20)], // 10:15
        ["s2", at(10, 0)], // s2 joins at 9:55: min would be 9:55, but never decreases
        ["s1", at(10, 30)], // s1 10:25, s2 still 9:55: held at 10:15
        ["s2", at(10, 25)], // min(10:25, 10:20) = 10:20
      ]),
    ).toEqual([at(10, 5), at(10, 5), at(10, 15), at(10, 15), at(10, 15), at(10, 20)]);
  });

  test("a source with only rejected rows is recorded but not counted", () => {
    const c = config();
    const s = advanceWatermark(c, advanceWatermark(c, INITIAL_WATERMARK, "s1", at(10, 10), NOW), "s2", null, NOW);
    expect(s.sources.s2).toEqual({ maxEventTime: null, lastBatchAt: NOW });
    expect(globalWatermark(c, s.sources, 0)).toBe(at(10, 5));
  });
});

describe("per-source delays", () => {
  const body = { watermarkDelay: "5 minutes", sources: { slow: { watermarkDelay: "1 hour" }, fast: {}, zero: { watermarkDelay: 0 } } };

  test("each source subtracts its own delay (min; the declared ones hold it at 0 until all have sent)", () => {
    const c = config(body);
    expect(
      run(c, [
        ["slow", at(12, 0)],
        ["fast", at(12, 0)],
        ["zero", at(12, 0)],
      ]),
    ).toEqual([0, 0, at(11, 0)]);
  });

  test("each source subtracts its own delay (max)", () => {
    const c = config({ ...body, watermarkPolicy: "max" });
    expect(
      run(c, [
        ["slow", at(12, 0)],
        ["fast", at(12, 0)],
        ["zero", at(12, 0)],
      ]),
    ).toEqual([at(11, 0), at(11, 55), at(12, 0)]);
  });

  test("an undeclared source uses the stream's delay", () => {
    const c = config({ watermarkDelay: "10 minutes" });
    expect(run(c, [["other", at(12, 0)]])).toEqual([at(11, 50)]);
  });
});

describe("global mode", () => {
  test("without an event-time column the watermark stays 0", () => {
    const r = parseStreamConfig({ key: ["id"], mode: "global" });
    if (!r.ok) throw new Error("bad config");
    const c = r.config;
    let s = INITIAL_WATERMARK;
    for (const source of ["a", "b", "a"]) s = advanceWatermark(c, s, source, null, NOW);
    expect(s.watermark).toBe(0);
    expect(globalWatermark(c, { a: { maxEventTime: at(10, 0), lastBatchAt: NOW } }, 0)).toBe(0);
  });

  test("with an event-time column it has a watermark like the other modes", () => {
    const c = config({ mode: "global" });
    expect(run(c, [["a", at(10, 0)]])).toEqual([at(9, 55)]);
  });
});

describe("globalWatermark (config changes)", () => {
  const sources = { a: { maxEventTime: at(10, 0), lastBatchAt: NOW }, b: { maxEventTime: at(11, 0), lastBatchAt: NOW } };

  test("a shorter delay moves the watermark forward", () => {
    expect(globalWatermark(config({ watermarkDelay: "1 minute" }), sources, at(9, 55))).toBe(at(9, 59));
  });

  test("a longer delay does not move it back", () => {
    expect(globalWatermark(config({ watermarkDelay: "1 hour" }), sources, at(9, 55))).toBe(at(9, 55));
  });

  test("declaring a new, silent source does not move it back", () => {
    expect(globalWatermark(config({ sources: { c: {} } }), sources, at(9, 55))).toBe(at(9, 55));
  });

  test("with no sources at all it stays where it was", () => {
    expect(globalWatermark(config(), {}, 123)).toBe(123);
    expect(globalWatermark(config(), {}, 0)).toBe(0);
  });
});

describe("properties", () => {
  const NAMES = ["a", "b", "c"] as const;
  const scenario = fc.record({
    policy: fc.constantFrom("min" as const, "max" as const),
    delay: fc.constantFrom(0, MIN, 5 * MIN),
    declared: fc.subarray([...NAMES]),
    slowDelay: fc.option(fc.constantFrom(0, 2 * MIN, 30 * MIN), { nil: undefined }),
    steps: fc.array(fc.tuple(fc.constantFrom(...NAMES), fc.option(fc.integer({ min: at(9, 0), max: at(11, 0) }), { nil: null })), {
      maxLength: 25,
    }),
  });

  test("never decreases, and equals the running max of the policy over the sources (property)", () => {
    fc.assert(
      fc.property(scenario, ({ policy, delay, declared, slowDelay, steps }) => {
        const sources: Record<string, { watermarkDelay?: number }> = {};
        for (const d of declared) sources[d] = d === "a" && slowDelay !== undefined ? { watermarkDelay: slowDelay } : {};
        const c = config({ watermarkPolicy: policy, watermarkDelay: delay, sources });
        const delayOf = (s: string) => (s === "a" && declared.includes("a") && slowDelay !== undefined ? slowDelay : delay);

        let state = INITIAL_WATERMARK;
        let expected = 0;
        const maxT = new Map<string, number>();
        for (const [source, t] of steps) {
          const before = state.watermark;
          state = advanceWatermark(c, state, source, t, NOW);
          expect(state.watermark).toBeGreaterThanOrEqual(before);

          if (t !== null) maxT.set(source, Math.max(maxT.get(source) ?? -Infinity, t));
          const names = new Set<string>([...declared, ...maxT.keys()]);
          if (names.size > 0) {
            const marks = [...names].map((s) => (maxT.has(s) ? maxT.get(s)! - delayOf(s) : 0));
            expected = Math.max(expected, policy === "min" ? Math.min(...marks) : Math.max(...marks));
          }
          expect(state.watermark).toBe(expected);
          expect(state.sources[source].maxEventTime).toBe(maxT.get(source) ?? null);
        }
      }),
      { numRuns: 400 },
    );
  });
});

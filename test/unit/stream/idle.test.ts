import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { advanceWatermark, globalWatermark, INITIAL_WATERMARK, isIdle, nextIdleAt, watermarkSources, type WatermarkState } from "../../../src/stream/watermark";
import { ReferenceModel, type ModelRow } from "../model";
import { validConfig } from "../stream-config";

const MIN = 60_000;
const at = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const NOW = at(13, 0);

const config = (body: Record<string, unknown> = {}): StreamConfig => validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", ...body });

/** A step: a batch of `source` commits at `now` (max event time `maxT`), or an alarm at `now` (source null). */
type Step = { now: number; source: string | null; maxT: number | null };

function run(c: StreamConfig, steps: Step[], from: WatermarkState = INITIAL_WATERMARK): number[] {
  let s = from;
  return steps.map(({ now, source, maxT }) => {
    s = source === null ? { ...s, watermark: globalWatermark(c, s.sources, s.watermark, now) } : advanceWatermark(c, s, source, maxT, now);
    return s.watermark;
  });
}

/**
 * A focused reference for idleness, written from DESIGN §8 and the issue alone:
 * a source silent for its idle timeout or longer (since its last committed
 * batch) is left out of the min/max until its next batch; a source that never
 * committed a batch is never idle; the watermark never decreases.
 */
class IdleModel {
  watermark = 0;
  readonly maxT = new Map<string, number>();
  readonly last = new Map<string, number>();
  constructor(
    readonly spec: {
      delay: number;
      policy: "min" | "max";
      idle?: number;
      declared: Record<string, { delay?: number; idle?: number; disabled?: boolean }>;
    },
  ) {}

  step({ now, source, maxT }: Step): number {
    if (source !== null) {
      if (maxT !== null) this.maxT.set(source, Math.max(this.maxT.get(source) ?? -Infinity, maxT));
      this.last.set(source, now);
    }
    const names = new Set([...Object.keys(this.spec.declared), ...this.maxT.keys()]);
    const marks: number[] = [];
    for (const s of names) {
      const d = this.spec.declared[s];
      if (d?.disabled) continue;
      const timeout = d?.idle ?? this.spec.idle;
      const last = this.last.get(s);
      if (timeout !== undefined && last !== undefined && now - last >= timeout) continue;
      marks.push(this.maxT.has(s) ? Math.max(0, this.maxT.get(s)! - (d?.delay ?? this.spec.delay)) : 0);
    }
    if (marks.length > 0) this.watermark = Math.max(this.watermark, this.spec.policy === "min" ? Math.min(...marks) : Math.max(...marks));
    return this.watermark;
  }
}

describe("idleTimeout in the config", () => {
  test("is an interval, per stream and per source", () => {
    const c = config({ idleTimeout: "2 minutes", sources: { a: { idleTimeout: "30 seconds" } } });
    expect(c.idleTimeout).toBe(2 * MIN);
    expect(c.sources.a.idleTimeout).toBe(30_000);
  });
  test("is absent unless given", () => {
    expect(config()).not.toHaveProperty("idleTimeout");
  });
  test("0 is refused", () => {
    const r = parseStreamConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", idleTimeout: 0, sources: { a: { idleTimeout: "0 s" } } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.path).sort()).toEqual(["idleTimeout", "sources.a.idleTimeout"]);
  });
});

describe("an idle source leaves the min", () => {
  const c = config({ idleTimeout: "10 minutes" });

  test("a silent source stops holding the watermark back once its timeout has passed", () => {
    const wm = run(c, [
      { now: NOW, source: "slow", maxT: at(10, 0) }, // slow: 9:55
      { now: NOW + 1 * MIN, source: "fast", maxT: at(11, 0) }, // min 9:55
      { now: NOW + 9 * MIN, source: "fast", maxT: at(11, 10) }, // slow silent 9 min: still in
      { now: NOW + 10 * MIN, source: "fast", maxT: at(11, 20) }, // 10 min: idle, fast alone: 11:15
    ]);
    expect(wm).toEqual([at(9, 55), at(9, 55), at(9, 55), at(11, 15)]);
  });

  test("an alarm at the idle moment moves it without a commit", () => {
    const wm = run(c, [
      { now: NOW, source: "slow", maxT: at(10, 0) },
      { now: NOW + 1 * MIN, source: "fast", maxT: at(11, 0) },
      { now: NOW + 10 * MIN - 1, source: null, maxT: null },
      { now: NOW + 10 * MIN, source: null, maxT: null },
    ]);
    expect(wm).toEqual([at(9, 55), at(9, 55), at(9, 55), at(10, 55)]);
  });

  test("with every source idle the watermark stays where it is (no traffic, nothing moves)", () => {
    const wm = run(c, [
      { now: NOW, source: "a", maxT: at(10, 0) },
      { now: NOW, source: "b", maxT: at(10, 30) },
      { now: NOW + 60 * MIN, source: null, maxT: null },
    ]);
    expect(wm).toEqual([at(9, 55), at(9, 55), at(9, 55)]);
  });

  test("a returning source rejoins the min at its next commit; the watermark does not go back", () => {
    const s0 = [
      { now: NOW, source: "slow", maxT: at(10, 0) },
      { now: NOW + 1 * MIN, source: "fast", maxT: at(11, 0) },
      { now: NOW + 11 * MIN, source: "fast", maxT: at(11, 30) }, // slow idle: 11:25
      { now: NOW + 12 * MIN, source: "slow", maxT: at(10, 5) }, // slow back at 10:00: rejoins, wm stays 11:25
      { now: NOW + 13 * MIN, source: "fast", maxT: at(12, 0) }, // min(10:00, 11:55) = 10:00 < 11:25: held
      { now: NOW + 14 * MIN, source: "slow", maxT: at(11, 40) }, // slow 11:35: min = 11:35
    ];
    expect(run(c, s0)).toEqual([at(9, 55), at(9, 55), at(11, 25), at(11, 25), at(11, 25), at(11, 35)]);
  });

  test("the returning source's rows behind the watermark are late (judged by the watermark in force), not dropped", () => {
    // The batch is judged by the watermark from before it (DESIGN §2.3): 11:25, moved on while it was idle.
    const model = new ReferenceModel({
      mode: "within-watermark",
      eventTime: "ts",
      keyColumns: ["id"],
      types: {},
      delay: 5 * MIN,
      policy: "min",
      declared: {},
      now: NOW,
      maxSkew: 86_400_000,
    });
    const rows = [
      { id: "x", ts: at(10, 5) },
      { id: "y", ts: at(11, 30) },
    ];
    const judged = model.judge(
      rows.map((row, index): ModelRow => ({ index, row, key: JSON.stringify([row.id]), t: row.ts })),
      at(11, 25),
    );
    expect(judged).toEqual(["l", "e"]);
  });

  test("a declared source that never sent is never idle", () => {
    const d = config({ idleTimeout: "1 minute", sources: { quiet: {} } });
    expect(
      run(d, [
        { now: NOW, source: "a", maxT: at(10, 0) },
        { now: NOW + 60 * MIN, source: "a", maxT: at(11, 0) },
      ]),
    ).toEqual([0, 0]);
  });

  test("a source's own idleTimeout overrides the stream's; without one it is never idle", () => {
    const d = config({ sources: { slow: { idleTimeout: "1 minute" } } });
    const progress = { maxEventTime: at(10, 0), lastBatchAt: NOW };
    expect(isIdle(d, "slow", progress, NOW + MIN)).toBe(true);
    expect(isIdle(d, "other", progress, NOW + 600 * MIN)).toBe(false);
    expect(isIdle(d, "slow", progress, undefined)).toBe(false);
  });

  test("nextIdleAt: the earliest moment an active source turns idle", () => {
    const d = config({ idleTimeout: "10 minutes", sources: { quick: { idleTimeout: "1 minute" } } });
    const sources = {
      a: { maxEventTime: at(10, 0), lastBatchAt: NOW },
      quick: { maxEventTime: at(10, 0), lastBatchAt: NOW + 30_000 },
    };
    expect(nextIdleAt(d, sources, NOW + 1)).toBe(NOW + 90_000);
    expect(nextIdleAt(d, sources, NOW + 90_000)).toBe(NOW + 10 * MIN);
    expect(nextIdleAt(d, sources, NOW + 10 * MIN)).toBeNull();
    expect(nextIdleAt(config(), sources, NOW)).toBeNull();
    expect(watermarkSources(d, sources, NOW + 90_000)).toEqual(["a"]);
  });
});

const names = ["a", "b", "c", "d"];
const scenario = fc.record({
  policy: fc.constantFrom("min" as const, "max" as const),
  delay: fc.integer({ min: 0, max: 10 * MIN }),
  idle: fc.option(fc.integer({ min: 1, max: 20 * MIN }), { nil: undefined }),
  declared: fc.dictionary(
    fc.constantFrom(...names),
    fc.record(
      {
        delay: fc.integer({ min: 0, max: 10 * MIN }),
        idle: fc.integer({ min: 1, max: 20 * MIN }),
        disabled: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
    { maxKeys: 3 },
  ),
  steps: fc.array(
    fc.record({
      gap: fc.integer({ min: 0, max: 15 * MIN }),
      source: fc.option(fc.constantFrom(...names), { nil: null, freq: 4 }),
      maxT: fc.option(fc.integer({ min: at(9, 0), max: at(12, 0) }), { nil: null, freq: 6 }),
    }),
    { maxLength: 40 },
  ),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function configOf(sc: Scenario, withIdle = true): StreamConfig {
  const sources: Record<string, Record<string, unknown>> = {};
  for (const [n, d] of Object.entries(sc.declared)) {
    sources[n] = {
      ...(d.delay === undefined ? {} : { watermarkDelay: d.delay }),
      ...(d.idle === undefined || !withIdle ? {} : { idleTimeout: d.idle }),
      ...(d.disabled === undefined ? {} : { disabled: d.disabled }),
    };
  }
  return config({
    watermarkDelay: sc.delay,
    watermarkPolicy: sc.policy,
    sources,
    ...(sc.idle === undefined || !withIdle ? {} : { idleTimeout: sc.idle }),
  });
}

function stepsOf(sc: Pick<Scenario, "steps">): Step[] {
  let now = NOW;
  return sc.steps.map((s) => ({ now: (now += s.gap), source: s.source, maxT: s.source === null ? null : s.maxT }));
}

describe("properties (against the focused reference)", () => {
  test("the watermark is the reference's after every commit and alarm", () => {
    fc.assert(
      fc.property(scenario, (sc) => {
        const model = new IdleModel({ delay: sc.delay, policy: sc.policy, idle: sc.idle, declared: sc.declared });
        const steps = stepsOf(sc);
        expect(run(configOf(sc), steps)).toEqual(steps.map((s) => model.step(s)));
      }),
      { numRuns: 300 },
    );
  });

  test("it never decreases", () => {
    fc.assert(
      fc.property(scenario, (sc) => {
        const wm = run(configOf(sc), stepsOf(sc));
        wm.forEach((w, i) => expect(w).toBeGreaterThanOrEqual(i === 0 ? 0 : wm[i - 1]));
      }),
    );
  });

  test("without idle timeouts it is the reference model's (ReferenceModel.commit), alarms changing nothing", () => {
    fc.assert(
      fc.property(scenario, (sc) => {
        const declared: Record<string, number | undefined> = {};
        for (const [n, d] of Object.entries(sc.declared)) if (!d.disabled) declared[n] = d.delay;
        // ReferenceModel has no disabled sources: leave them out of these runs.
        const disabled = new Set(
          Object.entries(sc.declared)
            .filter(([, d]) => d.disabled)
            .map(([n]) => n),
        );
        const steps = stepsOf(sc).filter((s) => s.source === null || !disabled.has(s.source));
        const model = new ReferenceModel({
          mode: "within-watermark",
          eventTime: "ts",
          keyColumns: ["id"],
          types: {},
          delay: sc.delay,
          policy: sc.policy,
          declared,
          now: NOW,
          maxSkew: 0,
        });
        const expected = steps.map((s) =>
          s.source === null ? model.watermark : model.commit(s.source, s.maxT === null ? [] : [{ index: 0, row: {}, key: "[]", t: s.maxT }]),
        );
        expect(run(configOf(sc, false), steps)).toEqual(expected);
      }),
    );
  });

  test("under min, idleness only lets the watermark advance sooner: never below the watermark without it", () => {
    fc.assert(
      fc.property(scenario, (sc) => {
        const s = { ...sc, policy: "min" as const };
        const steps = stepsOf(s);
        const withIdle = run(configOf(s), steps);
        const without = run(configOf(s, false), steps);
        withIdle.forEach((w, i) => expect(w).toBeGreaterThanOrEqual(without[i]));
      }),
    );
  });

  test("a source that commits is not idle then: it is back among the watermark's sources", () => {
    fc.assert(
      fc.property(scenario, (sc) => {
        const c = configOf(sc);
        let s = INITIAL_WATERMARK;
        for (const step of stepsOf(sc)) {
          if (step.source === null) continue;
          s = advanceWatermark(c, s, step.source, step.maxT, step.now);
          const counted = !c.sources[step.source]?.disabled && (Object.hasOwn(c.sources, step.source) || s.sources[step.source].maxEventTime !== null);
          expect(watermarkSources(c, s.sources, step.now).includes(step.source)).toBe(counted);
        }
      }),
    );
  });
});

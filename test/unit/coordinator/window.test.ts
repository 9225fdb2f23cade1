/**
 * The idempotency window (DESIGN §9, src/coordinator/window.ts). A batch id
 * retried within the window is answered from the ledger; once the ledger has
 * forgotten it, the retry is judged afresh by the real pure pipeline and must
 * add no output, in every mode. Random streams run against the reference model
 * (./model): first attempts decide exactly as the model does; retries land at
 * random times, before and after the window, between prompt evictions, and
 * the ledger forgets by the same rule (pruneStep) the Coordinator's alarm uses.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { forgettable, pruneStep, type RememberedGroup } from "../../../src/coordinator/window";
import { ReferenceModel } from "../model";
import { Pipeline } from "../pipeline";
import { configBody, materialize, modelSpec, NOW, scenarioArb, SECOND, type Scenario } from "../scenarios";

type Move = { kind: "next" } | { kind: "retry"; pick: number } | { kind: "wait"; ms: number } | { kind: "evict" } | { kind: "prune" };

/** A step of the clock (the alarm prunes after it), then a first attempt, a retry of an earlier batch id or a prompt eviction. */
const stepArb: fc.Arbitrary<Move[]> = fc
  .tuple(
    fc.integer({ min: 0, max: 45 }),
    fc.oneof(
      { weight: 4, arbitrary: fc.constant<Move>({ kind: "next" }) },
      { weight: 4, arbitrary: fc.nat(1_000).map((pick): Move => ({ kind: "retry", pick })) },
      { weight: 1, arbitrary: fc.constant<Move>({ kind: "evict" }) },
    ),
  )
  .map(([s, m]) => [{ kind: "wait", ms: s * SECOND }, { kind: "prune" }, m]);
const movesArb = fc.array(stepArb, { maxLength: 40 }).map((steps) => steps.flat());

interface Run {
  retriesAfresh: number;
  retriesReplayed: number;
  afreshInWithinWatermark: number;
}

/** Drives one scenario; `rule` is how the ledger decides what it may forget. */
export function drive(s: Scenario, window: number, moves: Move[], rule = forgettable): Run {
  const pipe = new Pipeline(configBody(s), NOW);
  const model = new ReferenceModel(modelSpec(s));
  const batches = materialize(s);
  // The ledger: commit number → the group (here one batch each) and its batch index; ids by batch index.
  const groups: (RememberedGroup & { batch: number })[] = [];
  const remembered = new Set<number>();
  let clock = 0;
  let next = 0;
  const run: Run = { retriesAfresh: 0, retriesReplayed: 0, afreshInWithinWatermark: 0 };
  const prune = () => {
    const ctx = { now: clock, window, mode: s.mode, watermark: pipe.wm.watermark, publishedUpTo: Number.MAX_SAFE_INTEGER };
    // Oldest first, up to the first that must stay (the Coordinator also keeps the newest: more than needed).
    let n = 0;
    while (n < groups.length && rule(groups[n], ctx)) n++;
    if (rule === forgettable) expect(pruneStep(groups, ctx, Infinity).upTo).toBe(n === 0 ? null : groups[n - 1].seq);
    for (const g of groups.splice(0, n)) remembered.delete(g.batch);
  };
  const first = (bi: number) => {
    const b = batches[bi];
    const got = pipe.run(b.source, b.rows);
    const want = model.runBatch(b.source, b.rows);
    expect(got.decisions.join(""), `batch ${bi}`).toBe(want.decisions.join(""));
    expect(got.emitted, `batch ${bi}`).toEqual(want.emitted);
    const times = got.decisions.flatMap((d, i) => (d === "r" ? [] : [timeOf(b.rows[i])]));
    groups.push({ seq: bi + 1, batch: bi, committedAt: clock, maxEventTime: s.withEventTime && times.length > 0 ? Math.max(...times) : null });
    remembered.add(bi);
  };
  for (const m of [...moves, ...batches.map((): Move => ({ kind: "next" }))]) {
    if (m.kind === "next" && next < batches.length) first(next++);
    else if (m.kind === "retry" && next > 0) {
      const bi = m.pick % next;
      if (remembered.has(bi)) {
        run.retriesReplayed++;
        continue; // answered with its recorded outcome: nothing runs
      }
      run.retriesAfresh++;
      if (s.mode === "within-watermark") run.afreshInWithinWatermark++;
      const b = batches[bi];
      const again = pipe.run(b.source, b.rows);
      expect(again.emitted, `batch ${bi} retried after the window (${JSON.stringify(again.decisions)})`).toEqual([]);
      // Judged afresh, it is still one more batch of the same rows: the model's watermark does not move either.
      expect(again.watermarkAfter).toBe(model.watermark);
    } else if (m.kind === "wait") clock += m.ms;
    else if (m.kind === "evict") {
      pipe.advanceAll();
      model.advance(0, model.watermark);
    } else if (m.kind === "prune") prune();
  }
  pipe.advanceAll();
  model.advance(0, model.watermark);
  expect(pipe.stateEntries()).toEqual(model.stateEntries());
  return run;
}

function timeOf(row: unknown): number {
  const ts = (row as { ts: number | string }).ts;
  return typeof ts === "number" ? ts : Date.parse(ts);
}

describe("the idempotency window", () => {
  test("a batch id retried after the ledger forgot it adds no output, in every mode (property)", () => {
    const seen = { afresh: 0, replayed: 0, within: 0 };
    fc.assert(
      fc.property(scenarioArb(10, 8), fc.constantFrom(60 * SECOND, 120 * SECOND), movesArb, (s, window, moves) => {
        const r = drive(s, window, moves);
        seen.afresh += r.retriesAfresh;
        seen.replayed += r.retriesReplayed;
        seen.within += r.afreshInWithinWatermark;
      }),
      { numRuns: 400 },
    );
    // The generator reaches both sides of the window, in the mode that needs the watermark rule.
    expect(seen.afresh).toBeGreaterThan(40);
    expect(seen.replayed).toBeGreaterThan(40);
    expect(seen.within).toBeGreaterThan(5);
  });

  test("without the watermark rule, within-watermark would emit a retried duplicate again", () => {
    // Two copies of A in one batch, 15 s apart with a 10 s delay: the second is a duplicate whose
    // time is past the first's expiry. Once A is evicted (wm 10 s) the second copy is not late (15 s > 10 s).
    const s: Scenario = {
      mode: "within-watermark",
      withEventTime: true,
      delay: 10 * SECOND,
      delayAsText: false,
      policy: "min",
      partitions: 1,
      declared: [],
      idType: "none",
      keyShape: "id",
      volatile: ["n", "ts"],
      onConflict: "drop",
      batches: [
        {
          source: "s1",
          jump: 0,
          rows: [
            { kind: "valid", id: 0, g: 0, t: 0, iso: false, v: 0 },
            { kind: "valid", id: 0, g: 0, t: 15, iso: false, v: 0 },
          ],
        },
        { source: "s1", jump: 0, rows: [{ kind: "valid", id: 1, g: 0, t: 17, iso: false, v: 0 }] },
      ],
    };
    const moves: Move[] = [
      { kind: "next" },
      { kind: "next" },
      { kind: "evict" },
      { kind: "wait", ms: 120 * SECOND },
      { kind: "prune" },
      { kind: "retry", pick: 0 },
    ];
    const windowOnly = (g: RememberedGroup, ctx: { now: number; window: number }) => g.committedAt + ctx.window <= ctx.now;
    expect(() => drive(s, 60 * SECOND, moves, windowOnly)).toThrow(/retried after the window/);
    // The rule keeps batch 0 until the watermark passes its 15 s: the retry is a replay.
    expect(drive(s, 60 * SECOND, moves)).toMatchObject({ retriesReplayed: 1, retriesAfresh: 0 });
  });
});

describe("pruneStep", () => {
  const ctx = { now: 100_000, window: 60_000, mode: "within-watermark" as const, watermark: 5_000, publishedUpTo: 10 };
  test("forgets the oldest groups up to the first that must stay, and says when to look again", () => {
    const g = (seq: number, committedAt: number, maxEventTime: number | null = null) => ({ seq, committedAt, maxEventTime });
    expect(pruneStep([g(1, 10_000), g(2, 30_000), g(3, 50_000)], ctx)).toEqual({ upTo: 2, retryAt: 110_000 });
    // Held by the watermark: no clock retry (the watermark's own alarm comes back).
    expect(pruneStep([g(1, 10_000, 4_000), g(2, 20_000, 6_000), g(3, 20_000)], ctx)).toEqual({ upTo: 1, retryAt: null });
    // Not yet in the committed manifest: kept.
    expect(pruneStep([g(10, 10_000), g(11, 10_000)], ctx)).toEqual({ upTo: 10, retryAt: null });
    // A full step: more may be due at once.
    expect(pruneStep([g(1, 10_000), g(2, 10_000)], ctx, 2)).toEqual({ upTo: 2, retryAt: 100_000 });
    expect(pruneStep([], ctx)).toEqual({ upTo: null, retryAt: null });
    // Other modes need no watermark: their keys outlive what a retry could emit.
    expect(forgettable(g(1, 10_000, 9_000), { ...ctx, mode: "event-time-key" })).toBe(true);
    expect(forgettable(g(1, 10_000, 9_000), { ...ctx, mode: "global" })).toBe(true);
  });
});

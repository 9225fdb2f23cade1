/**
 * The backbone: random streams run through the real pure pipeline (./pipeline)
 * and through the naive reference model (./model, written from DESIGN §2).
 *
 *  a. Sequential batches: decisions, output, counts, watermarks and the final
 *     state are exactly the model's.
 *  b. Interleaved batches (several begin under one watermark, partitions apply
 *     them in any order, commits land in any order, prompt eviction at random):
 *     exactly the model's decisions when the model is told each batch's begin
 *     watermark and its partition routing, and the guarantees of DESIGN §2.8
 *     over the union of everything emitted.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { ReferenceModel, type ModelDecision, type ModelRow } from "../model";
import { Pipeline, type RunningBatch } from "../pipeline";
import { configBody, expectCounts, expectGuarantees, materialize, modelSpec, NOW, scenarioArb, type Emitted } from "../scenarios";

// ---------------------------------------------------------------- a. sequential

describe("sequential batches", () => {
  test("the pipeline decides exactly as the reference model (property)", () => {
    fc.assert(
      fc.property(scenarioArb(10, 8), (s) => {
        const pipe = new Pipeline(configBody(s), NOW);
        const model = new ReferenceModel(modelSpec(s));
        materialize(s).forEach((b, bi) => {
          const got = pipe.run(b.source, b.rows);
          const want = model.runBatch(b.source, b.rows);
          const what = `batch ${bi}`;
          expect(got.decisions.join(""), what).toBe(want.decisions.join(""));
          expect(got.emitted, what).toEqual(want.emitted);
          expect(got.watermark, what).toBe(want.watermark);
          expect(got.watermarkAfter, what).toBe(want.watermarkAfter);
          expectCounts(got, b.rows.length);
        });
        pipe.advanceAll();
        model.advance(0, model.watermark);
        expect(pipe.stateEntries()).toEqual(model.stateEntries());
      }),
      { numRuns: 400 },
    );
  });

  test("the result does not depend on the number of partitions (property)", () => {
    fc.assert(
      fc.property(scenarioArb(8, 8), fc.integer({ min: 1, max: 8 }), (s, other) => {
        const a = new Pipeline(configBody(s), NOW);
        const b = new Pipeline({ ...configBody(s), partitions: other }, NOW);
        for (const batch of materialize(s)) {
          const ra = a.run(batch.source, batch.rows);
          const rb = b.run(batch.source, batch.rows);
          expect(rb.decisions).toEqual(ra.decisions);
          expect(rb.watermarkAfter).toBe(ra.watermarkAfter);
        }
      }),
      { numRuns: 100 },
    );
  });

  test("the generator exercises what it should", () => {
    // a sanity check on the scenarios themselves: duplicates, late rows, rejections,
    // re-emission after eviction and a moving watermark all occur
    const seen = { d: 0, l: 0, r: 0, c: 0, x: 0, reemit: 0, moved: 0 };
    fc.assert(
      fc.property(scenarioArb(10, 8), (s) => {
        const model = new ReferenceModel(modelSpec(s));
        const keys = new Set<string>();
        for (const b of materialize(s)) {
          const r = model.runBatch(b.source, b.rows);
          for (const d of r.decisions) if (d !== "e") seen[d]++;
          if (r.watermarkAfter > r.watermark) seen.moved++;
          for (const row of r.emitted) {
            const k = s.keyShape === "content" ? JSON.stringify({ ...row, n: 0 }) : JSON.stringify(modelSpec(s).keyColumns.map((c) => row[c]));
            if (keys.has(k) && s.mode === "within-watermark") seen.reemit++;
            keys.add(k);
          }
        }
      }),
      { numRuns: 200, seed: 42 },
    );
    // (seed 42 gives d 529, l 928, r 284, c 284, x 324, reemit 54, moved 325: most copies differ in a field that is not volatile)
    const floor = { d: 500, l: 300, r: 100, c: 100, x: 50, reemit: 30, moved: 100 };
    for (const [what, count] of Object.entries(seen)) expect(count, what).toBeGreaterThan(floor[what as keyof typeof floor]);
  });
});

// ---------------------------------------------------------------- b. interleaved

interface Live {
  no: number;
  run: RunningBatch;
  rows: unknown[];
  /** the model's view: accepted rows by index, and the begin watermark */
  accepted: Map<number, ModelRow>;
  beginWatermark: number;
  decisions: ModelDecision[];
  pending: number[];
}

type Move = { kind: "begin" } | { kind: "apply"; b: Live; p: number } | { kind: "commit"; b: Live } | { kind: "advance"; p: number };

describe("interleaved batches", () => {
  test("exact against the model given each batch's begin watermark; DESIGN §2.8 holds over the union (property)", () => {
    let interleavedRuns = 0;
    let raisedApplies = 0;
    let raisedRows = 0;
    let sameWatermarkRuns = 0;
    fc.assert(
      fc.property(scenarioArb(8, 6), fc.array(fc.nat(), { minLength: 150, maxLength: 150 }), (s, choices) => {
        const pipe = new Pipeline(configBody(s), NOW);
        const model = new ReferenceModel(modelSpec(s));
        const batches = materialize(s);
        const live: Live[] = [];
        const emitted: Emitted[] = [];
        /** every emission, in apply order: for the duplicate-witness check */
        const emissions: { stateKey: string; t: number | null; seq: number }[] = [];
        const partitionOfKey = new Map<string, number>();
        let seq = 0;
        let next = 0;
        let advances = 0;
        let lastCommitted = 0;
        let concurrent = 0;
        let sameWatermarkPairs = 0;
        const outputNs: number[] = [];
        const emittedNs: number[] = [];
        const notLate = new Set<string>();
        let c = 0;
        const pick = (n: number) => (c < choices.length ? choices[c++] % n : 0);

        while (next < batches.length || live.length > 0) {
          // weighted so that batches overlap and commits overtake applies of older batches
          const moves: Move[] = [];
          if (next < batches.length) moves.push(...Array.from({ length: 4 }, (): Move => ({ kind: "begin" })));
          for (const b of live) {
            for (const p of b.pending) moves.push({ kind: "apply", b, p });
            if (b.pending.length === 0) moves.push(...Array.from({ length: 4 }, (): Move => ({ kind: "commit", b })));
          }
          if (advances < 2 * batches.length) moves.push({ kind: "advance", p: pick(s.partitions) });
          const move = moves[pick(moves.length)];

          if (move.kind === "begin") {
            const { source, rows } = batches[next];
            const run = pipe.begin(source, rows);
            expect(run.watermark, `batch ${next} begins under the global watermark`).toBe(model.watermark);
            const accepted = new Map<number, ModelRow>();
            rows.forEach((raw, i) => {
              const r = model.validate(raw, i);
              if (r) accepted.set(i, r);
            });
            // the plan routes exactly the accepted rows, each once
            const routed = [...run.plan.subBatches.values()].flatMap((rs) => rs.map((r) => r.index)).sort((a, b) => a - b);
            expect(routed).toEqual([...accepted.keys()]);
            if (live.length > 0) concurrent++;
            if (live.some((b) => b.beginWatermark === model.watermark)) sameWatermarkPairs++;
            live.push({
              no: next,
              run,
              rows,
              accepted,
              beginWatermark: model.watermark,
              decisions: rows.map(() => "r"),
              pending: [...run.plan.subBatches.keys()].sort((a, b) => a - b),
            });
            next++;
          } else if (move.kind === "apply") {
            const { b, p } = move;
            b.pending = b.pending.filter((x) => x !== p);
            const globalNow = model.watermark;
            const pw = pipe.apply(b.run, p);
            // DESIGN §2.7 at work: the partition had seen a newer watermark than this batch's, and it decides some row
            if (pw > b.beginWatermark) {
              raisedApplies++;
              raisedRows += b.run.plan.subBatches.get(p)!.filter((r) => r.eventTime !== null && r.eventTime > b.beginWatermark && r.eventTime <= pw).length;
            }
            // the model judges the same rows, in input order, in the same state partition
            const indices = b.run.plan.subBatches.get(p)!.map((r) => r.index);
            const rows = indices
              .slice()
              .sort((x, y) => x - y)
              .map((i) => b.accepted.get(i)!);
            const judged = model.judge(rows, b.beginWatermark, p);
            rows.forEach((r, i) => {
              b.decisions[r.index] = judged[i];
              const stateKey = model.stateKeyOf(r);
              // a state key lives in one partition forever
              expect(partitionOfKey.get(r.key) ?? p, `key ${r.key} routed to two partitions`).toBe(p);
              partitionOfKey.set(r.key, p);
              const got = b.run.decided.get(p)![indices.indexOf(r.index)];
              // late: T <= the batch's watermark always is; and never beyond the global watermark
              if (s.withEventTime && r.t! <= b.beginWatermark) expect(got).toBe("l");
              if (got === "l") expect(r.t!).toBeLessThanOrEqual(globalNow);
              if (got === "d" || got === "c" || got === "x") {
                // a duplicate has a witness: an earlier emission of its state key that cannot have expired yet
                const w = emissions.filter((e) => e.stateKey === stateKey).pop();
                expect(w, `duplicate without an earlier emission of ${stateKey}`).toBeDefined();
                const exp = model.expiryOf(w!.t);
                if (exp !== null) expect(exp).toBeGreaterThan(b.beginWatermark);
              }
              if (got === "e") {
                emissions.push({ stateKey, t: r.t, seq: seq++ });
                emittedNs.push(r.row.n as number);
              }
              if (got !== "l") notLate.add(stateKey);
            });
          } else if (move.kind === "commit") {
            const { b } = move;
            live.splice(live.indexOf(b), 1);
            const got = pipe.commit(b.run);
            const after = model.commit(
              b.run.source,
              [...b.accepted.values()].filter((r) => b.decisions[r.index] !== "x"),
            );
            const what = `batch ${b.no}`;
            expect(got.decisions.join(""), what).toBe(b.decisions.join(""));
            expect(got.watermark, what).toBe(b.beginWatermark);
            expect(got.watermarkAfter, what).toBe(after);
            expect(got.watermarkAfter, `${what}: the global watermark never decreases`).toBeGreaterThanOrEqual(lastCommitted);
            lastCommitted = got.watermarkAfter;
            expectCounts(got, b.rows.length);
            const want = [...b.accepted.values()].filter((r) => b.decisions[r.index] === "e");
            expect(got.emitted, what).toEqual(want.map((r) => r.row));
            // the union of what the pipeline output, each row identified by its unique n
            for (const row of got.emitted) {
              const r = [...b.accepted.values()].find((a) => a.row.n === row.n);
              expect(r, `output row ${JSON.stringify(row)} is not an accepted input row of ${what}`).toBeDefined();
              emitted.push({ key: r!.key, t: r!.t });
              outputNs.push(row.n as number);
            }
          } else {
            advances++;
            pipe.advance(move.p);
            model.advance(move.p, model.watermark);
          }
        }

        expectGuarantees(s, emitted);
        // no loss: every row decided "emitted" is in the output exactly once...
        const ns = outputNs.slice().sort((x, y) => x - y);
        expect(new Set(ns).size).toBe(ns.length);
        expect(ns).toEqual(emittedNs.slice().sort((x, y) => x - y));
        // ...and the state key of every accepted row that was not late was emitted
        const emittedStateKeys = new Set(emissions.map((e) => e.stateKey));
        for (const k of notLate) expect(emittedStateKeys.has(k), `${k} was never emitted`).toBe(true);

        pipe.advanceAll();
        for (let p = 0; p < s.partitions; p++) model.advance(p, model.watermark);
        expect(pipe.stateEntries()).toEqual(model.stateEntries());
        if (concurrent > 0) interleavedRuns++;
        if (sameWatermarkPairs > 0) sameWatermarkRuns++;
      }),
      { numRuns: 400 },
    );
    // the schedules really interleave: batches begin while others are in flight, under the same watermark
    expect(interleavedRuns).toBeGreaterThan(200);
    expect(sameWatermarkRuns).toBeGreaterThan(100);
    // and partitions judge batches begun under older watermarks, with rows between the two watermarks
    expect(raisedApplies).toBeGreaterThan(100);
    expect(raisedRows).toBeGreaterThan(50);
  });
});

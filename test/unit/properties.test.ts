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
import { ReferenceModel, type ModelDecision, type ModelMode, type ModelRow, type ModelSpec } from "./model";
import { Pipeline, type CommittedBatch, type RunningBatch } from "./pipeline";

const SECOND = 1_000;
const BASE = Date.UTC(2024, 0, 1, 10, 0, 0);
const NOW = BASE + 3_600_000;
const SKEW = 86_400_000;

// ---------------------------------------------------------------- scenarios

type IdType = "none" | "string" | "int";
type KeyShape = "id" | "id+g" | "id+ts";
type RowKind = "valid" | "missingKey" | "nullKey" | "objectKey" | "badTs" | "missingTs" | "futureTs" | "notObject";

interface RowSpec {
  kind: RowKind;
  id: number;
  g: number;
  /** seconds after the batch's base time */
  t: number;
  iso: boolean;
}

interface Scenario {
  mode: ModelMode;
  withEventTime: boolean;
  delay: number;
  delayAsText: boolean;
  policy: "min" | "max";
  partitions: number;
  declared: { name: string; delay: number | undefined }[];
  idType: IdType;
  keyShape: KeyShape;
  batches: { source: string; jump: number; rows: RowSpec[] }[];
}

/** Small alphabets so that duplicates happen; 1 vs "1" are distinct keys unless a type coerces them together. */
const IDS: Record<IdType, readonly (string | number)[]> = {
  none: ["a", "b", "c", 1, "1"],
  string: ["a", "b", 1, "1", "c"],
  int: [1, 2, 3, "1", "2"],
};

const rowSpec: fc.Arbitrary<RowSpec> = fc.record({
  kind: fc.oneof(
    { weight: 12, arbitrary: fc.constant<RowKind>("valid") },
    { weight: 1, arbitrary: fc.constantFrom<RowKind>("missingKey", "nullKey", "objectKey", "badTs", "missingTs", "futureTs", "notObject") },
  ),
  id: fc.nat(4),
  g: fc.nat(1),
  t: fc.nat(15),
  iso: fc.boolean(),
});

function scenarioArb(maxBatches: number, maxRows: number): fc.Arbitrary<Scenario> {
  return fc
    .record({
      mode: fc.constantFrom<ModelMode>("within-watermark", "event-time-key", "global"),
      withEventTime: fc.boolean(),
      delay: fc.constantFrom(0, 2 * SECOND, 5 * SECOND, 10 * SECOND),
      delayAsText: fc.boolean(),
      policy: fc.constantFrom<"min" | "max">("min", "max"),
      partitions: fc.integer({ min: 1, max: 8 }),
      declared: fc.subarray(["s1", "s2", "s3"]).chain((names) =>
        fc.tuple(...names.map((name) => fc.record({ name: fc.constant(name), delay: fc.constantFrom(undefined, 0, 3 * SECOND, 8 * SECOND) }))),
      ),
      idType: fc.constantFrom<IdType>("none", "string", "int"),
      keyShape: fc.constantFrom<KeyShape>("id", "id", "id+g", "id+ts"),
      batches: fc.array(
        fc.record({
          // now and then a batch from further ahead, so the watermark jumps past batches still in flight
          jump: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 10, max: 30 }) }),
          source: fc.oneof({ weight: 3, arbitrary: fc.constant("s1") }, { weight: 2, arbitrary: fc.constant("s2") }, { weight: 1, arbitrary: fc.constant("s3") }),
          rows: fc.array(rowSpec, { maxLength: maxRows }),
        }),
        { minLength: 1, maxLength: maxBatches },
      ),
    })
    .map((s) => {
      const withEventTime = s.mode !== "global" || s.withEventTime;
      return { ...s, withEventTime, keyShape: !withEventTime && s.keyShape === "id+ts" ? "id" : s.keyShape };
    });
}

function keyColumns(s: Scenario): string[] {
  return s.keyShape === "id" ? ["id"] : s.keyShape === "id+g" ? ["id", "g"] : ["id", "ts"];
}

function configBody(s: Scenario): Record<string, unknown> {
  return {
    key: keyColumns(s),
    mode: s.mode,
    ...(s.withEventTime ? { eventTime: "ts", watermarkDelay: s.delayAsText ? `${s.delay / SECOND} seconds` : s.delay } : {}),
    partitions: s.partitions,
    watermarkPolicy: s.policy,
    schema: s.idType === "none" ? {} : { id: s.idType },
    sources: Object.fromEntries(s.declared.map((d) => [d.name, d.delay === undefined ? {} : { watermarkDelay: d.delay }])),
  };
}

function modelSpec(s: Scenario): ModelSpec {
  return {
    mode: s.mode,
    eventTime: s.withEventTime ? "ts" : null,
    keyColumns: keyColumns(s),
    types: s.idType === "none" ? {} : { id: s.idType },
    delay: s.withEventTime ? s.delay : 0,
    policy: s.policy,
    declared: Object.fromEntries(s.declared.map((d) => [d.name, d.delay])),
    now: NOW,
    maxSkew: SKEW,
  };
}

/**
 * The JSON rows of every batch. Event times drift forward with the batch number
 * (3 s a batch, rows spread over 15 s, delays up to 10 s) so that keys expire and come back.
 */
function materialize(s: Scenario): { source: string; rows: unknown[] }[] {
  let n = 0;
  return s.batches.map((b, bi) => ({
    source: b.source,
    rows: b.rows.map((r) => {
      const T = BASE + (bi * 3 + b.jump + r.t) * SECOND;
      const ts = r.iso ? new Date(T).toISOString() : T;
      const id = IDS[s.idType][r.id];
      const g = s.keyShape === "id+g" ? { g: ["x", "y"][r.g] } : {};
      const row: Record<string, unknown> = { n: n++, id, ts, ...g };
      switch (r.kind) {
        case "valid":
          return row;
        case "missingKey":
          delete row.id;
          return row;
        case "nullKey":
          return { ...row, id: null };
        case "objectKey":
          return { ...row, id: { v: id } };
        case "badTs":
          return { ...row, ts: "not-a-time" };
        case "missingTs":
          delete row.ts;
          return row;
        case "futureTs":
          return { ...row, ts: NOW + SKEW + SECOND };
        case "notObject":
          return r.g === 0 ? 7 : [id];
      }
    }),
  }));
}

// ---------------------------------------------------------------- checks

interface Emitted {
  key: string;
  t: number | null;
}

/** DESIGN §2.8, over the union of everything emitted. */
function expectGuarantees(s: Scenario, emitted: Emitted[]) {
  const byKey = new Map<string, (number | null)[]>();
  for (const e of emitted) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e.t]);
  for (const [key, times] of byKey) {
    if (s.mode === "global") {
      expect(times.length, `global: key ${key} emitted ${times.length} times`).toBe(1);
    } else if (s.mode === "event-time-key") {
      expect(new Set(times).size, `event-time-key: key ${key} emitted twice at one time: ${times}`).toBe(times.length);
    } else {
      const sorted = (times as number[]).slice().sort((a, b) => a - b);
      for (let i = 1; i < sorted.length; i++) {
        expect(sorted[i] - sorted[i - 1], `within-watermark: key ${key} emitted at ${sorted[i - 1]} and ${sorted[i]}, delay ${s.delay}`).toBeGreaterThan(s.delay);
      }
    }
  }
}

function expectCounts(got: CommittedBatch, input: number) {
  const { counts } = got;
  expect(counts.input).toBe(input);
  expect(counts.emitted + counts.duplicates + counts.late + counts.rejected.length).toBe(input);
  expect(counts.emitted).toBe(got.emitted.length);
  expect(counts.emitted).toBe(got.decisions.filter((d) => d === "e").length);
  expect(counts.duplicates).toBe(got.decisions.filter((d) => d === "d").length);
  expect(counts.late).toBe(got.decisions.filter((d) => d === "l").length);
  expect(counts.rejected.map((r) => r.index)).toEqual(got.decisions.flatMap((d, i) => (d === "r" ? [i] : [])));
  for (const r of counts.rejected) expect(r.error).toMatch(/\S/);
}

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
    const seen = { d: 0, l: 0, r: 0, reemit: 0, moved: 0 };
    fc.assert(
      fc.property(scenarioArb(10, 8), (s) => {
        const model = new ReferenceModel(modelSpec(s));
        const keys = new Set<string>();
        for (const b of materialize(s)) {
          const r = model.runBatch(b.source, b.rows);
          for (const d of r.decisions) if (d !== "e") seen[d]++;
          if (r.watermarkAfter > r.watermark) seen.moved++;
          for (const row of r.emitted) {
            const k = JSON.stringify(modelSpec(s).keyColumns.map((c) => row[c]));
            if (keys.has(k) && s.mode === "within-watermark") seen.reemit++;
            keys.add(k);
          }
        }
      }),
      { numRuns: 200, seed: 42 },
    );
    // (seed 42 gives d 1368, l 974, r 293, reemit 72, moved 317)
    const floor = { d: 500, l: 300, r: 100, reemit: 30, moved: 100 };
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
            const rows = indices.slice().sort((x, y) => x - y).map((i) => b.accepted.get(i)!);
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
              if (got === "d") {
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
              if (got === "e" || got === "d") notLate.add(stateKey);
            });
          } else if (move.kind === "commit") {
            const { b } = move;
            live.splice(live.indexOf(b), 1);
            const got = pipe.commit(b.run);
            const after = model.commit(b.run.source, [...b.accepted.values()]);
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

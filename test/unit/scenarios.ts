/**
 * Random streams for the property tests: scenarios (config, sources, rows with
 * duplicates, late and invalid rows), their JSON rows, and the checks of
 * DESIGN §2.8 that hold over everything emitted.
 */
import fc from "fast-check";
import { expect } from "vitest";
import type { ModelMode, ModelSpec } from "./model";
import type { CommittedBatch } from "./pipeline";

export const SECOND = 1_000;
export const BASE = Date.UTC(2024, 0, 1, 10, 0, 0);
export const NOW = BASE + 3_600_000;
export const SKEW = 86_400_000;

// ---------------------------------------------------------------- scenarios

export type IdType = "none" | "string" | "int";
/** content: a content key without `n` (each row's unique number) */
export type KeyShape = "id" | "id+g" | "id+ts" | "content";
export type RowKind = "valid" | "missingKey" | "nullKey" | "objectKey" | "badTs" | "missingTs" | "futureTs" | "notObject";

export interface RowSpec {
  kind: RowKind;
  id: number;
  g: number;
  /** seconds after the batch's base time */
  t: number;
  iso: boolean;
  /** a payload field: copies that differ in it (and in no volatile field) conflict */
  v: number;
}

export interface Scenario {
  mode: ModelMode;
  withEventTime: boolean;
  delay: number;
  delayAsText: boolean;
  policy: "min" | "max";
  partitions: number;
  declared: { name: string; delay: number | undefined }[];
  idType: IdType;
  keyShape: KeyShape;
  /** the stream's volatile fields: `n` differs in every row, `ts` between copies of a key */
  volatile: string[];
  onConflict: "drop" | "reject";
  batches: { source: string; jump: number; rows: RowSpec[] }[];
}

/** Small alphabets so that duplicates happen; 1 vs "1" are distinct keys unless a type coerces them together. */
export const IDS: Record<IdType, readonly (string | number)[]> = {
  none: ["a", "b", "c", 1, "1"],
  string: ["a", "b", 1, "1", "c"],
  int: [1, 2, 3, "1", "2"],
};

export const rowSpec: fc.Arbitrary<RowSpec> = fc.record({
  kind: fc.oneof(
    { weight: 12, arbitrary: fc.constant<RowKind>("valid") },
    { weight: 1, arbitrary: fc.constantFrom<RowKind>("missingKey", "nullKey", "objectKey", "badTs", "missingTs", "futureTs", "notObject") },
  ),
  id: fc.nat(4),
  g: fc.nat(1),
  t: fc.nat(15),
  iso: fc.boolean(),
  v: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
});

export function scenarioArb(maxBatches: number, maxRows: number): fc.Arbitrary<Scenario> {
  return fc
    .record({
      mode: fc.constantFrom<ModelMode>("within-watermark", "event-time-key", "global"),
      withEventTime: fc.boolean(),
      delay: fc.constantFrom(0, 2 * SECOND, 5 * SECOND, 10 * SECOND),
      delayAsText: fc.boolean(),
      policy: fc.constantFrom<"min" | "max">("min", "max"),
      partitions: fc.integer({ min: 1, max: 8 }),
      declared: fc
        .subarray(["s1", "s2", "s3"])
        .chain((names) =>
          fc.tuple(...names.map((name) => fc.record({ name: fc.constant(name), delay: fc.constantFrom(undefined, 0, 3 * SECOND, 8 * SECOND) }))),
        ),
      idType: fc.constantFrom<IdType>("none", "string", "int"),
      keyShape: fc.constantFrom<KeyShape>("id", "id", "id+g", "id+ts", "content"),
      volatile: fc.constantFrom<string[]>(["n", "ts"], ["n", "ts"], ["n", "ts"], ["n", "ts"], ["n"], []),
      onConflict: fc.constantFrom<"drop" | "reject">("drop", "reject"),
      batches: fc.array(
        fc.record({
          // now and then a batch from further ahead, so the watermark jumps past batches still in flight
          jump: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 10, max: 30 }) }),
          source: fc.oneof(
            { weight: 3, arbitrary: fc.constant("s1") },
            { weight: 2, arbitrary: fc.constant("s2") },
            { weight: 1, arbitrary: fc.constant("s3") },
          ),
          rows: fc.array(rowSpec, { maxLength: maxRows }),
        }),
        { minLength: 1, maxLength: maxBatches },
      ),
    })
    .map((s) => {
      const withEventTime = s.mode !== "global" || s.withEventTime;
      const keyShape: KeyShape = !withEventTime && s.keyShape === "id+ts" ? "id" : s.keyShape;
      // A content key has no conflicts, so no volatile fields.
      return { ...s, withEventTime, keyShape, volatile: keyShape === "content" ? [] : s.volatile };
    });
}

export function keyColumns(s: Scenario): string[] {
  return s.keyShape === "id" || s.keyShape === "content" ? ["id"] : s.keyShape === "id+g" ? ["id", "g"] : ["id", "ts"];
}

export function configBody(s: Scenario): Record<string, unknown> {
  return {
    key: s.keyShape === "content" ? { content: { exclude: ["n"] } } : keyColumns(s),
    mode: s.mode,
    ...(s.volatile.length > 0 ? { volatile: s.volatile } : {}),
    ...(s.onConflict === "reject" ? { onConflict: "reject" } : {}),
    ...(s.withEventTime ? { eventTime: "ts", watermarkDelay: s.delayAsText ? `${s.delay / SECOND} seconds` : s.delay } : {}),
    partitions: s.partitions,
    watermarkPolicy: s.policy,
    schema: s.idType === "none" ? {} : { id: s.idType },
    sources: Object.fromEntries(s.declared.map((d) => [d.name, d.delay === undefined ? {} : { watermarkDelay: d.delay }])),
  };
}

export function modelSpec(s: Scenario): ModelSpec {
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
    contentExclude: s.keyShape === "content" ? ["n"] : null,
    volatile: s.volatile,
    onConflict: s.onConflict,
  };
}

/**
 * The JSON rows of every batch. Event times drift forward with the batch number
 * (3 s a batch, rows spread over 15 s, delays up to 10 s) so that keys expire and come back.
 */
export function materialize(s: Scenario): { source: string; rows: unknown[] }[] {
  let n = 0;
  return s.batches.map((b, bi) => ({
    source: b.source,
    rows: b.rows.map((r) => {
      const T = BASE + (bi * 3 + b.jump + r.t) * SECOND;
      const ts = r.iso ? new Date(T).toISOString() : T;
      const id = IDS[s.idType][r.id];
      const g = s.keyShape === "id+g" ? { g: ["x", "y"][r.g] } : {};
      const row: Record<string, unknown> = { n: n++, id, ts, ...g, v: r.v };
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

export interface Emitted {
  key: string;
  t: number | null;
}

/** DESIGN §2.8, over the union of everything emitted. */
export function expectGuarantees(s: Scenario, emitted: Emitted[]) {
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
        expect(sorted[i] - sorted[i - 1], `within-watermark: key ${key} emitted at ${sorted[i - 1]} and ${sorted[i]}, delay ${s.delay}`).toBeGreaterThan(
          s.delay,
        );
      }
    }
  }
}

export function expectCounts(got: CommittedBatch, input: number) {
  const { counts } = got;
  expect(counts.input).toBe(input);
  expect(counts.emitted + counts.duplicates + counts.late + counts.rejected.length).toBe(input);
  expect(counts.emitted).toBe(got.emitted.length);
  expect(counts.emitted).toBe(got.decisions.filter((d) => d === "e").length);
  // a dropped conflict is counted in duplicates and in conflicts; a rejected one in rejected and in conflicts
  expect(counts.duplicates).toBe(got.decisions.filter((d) => d === "d" || d === "c").length);
  expect(counts.conflicts).toBe(got.decisions.filter((d) => d === "c" || d === "x").length);
  expect(counts.late).toBe(got.decisions.filter((d) => d === "l").length);
  expect(counts.rejected.map((r) => r.index)).toEqual(got.decisions.flatMap((d, i) => (d === "r" || d === "x" ? [i] : [])));
  for (const r of counts.rejected) expect(r.error).toMatch(/\S/);
}

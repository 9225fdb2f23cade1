/**
 * The worked examples of the issue, run through the pure pipeline (the real
 * src/stream pieces composed as the Durable Objects compose them): one row per
 * batch from one source, delay 5 minutes, times on 2024-01-01.
 */
import { describe, expect, test } from "vitest";
import { ReferenceModel, type ModelMode } from "../model";
import { Pipeline } from "../pipeline";

const hm = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const iso = (h: number, m: number) => new Date(hm(h, m)).toISOString();
const NOW = hm(12, 0);

type Step = [id: string, time: [number, number], decision: "e" | "d" | "l", watermarkBefore: number, watermarkAfter: number];

function play(mode: ModelMode, partitions: number, steps: Step[]) {
  // The copies of an id differ in their event time: volatile, so that they are duplicates, not conflicts (DESIGN §11).
  const pipe = new Pipeline({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", mode, partitions, volatile: ["ts"] }, NOW);
  const model = new ReferenceModel({
    mode,
    eventTime: "ts",
    keyColumns: ["id"],
    types: {},
    delay: 5 * 60_000,
    policy: "min",
    declared: {},
    now: NOW,
    maxSkew: 86_400_000,
    volatile: ["ts"],
  });
  const output: string[] = [];
  steps.forEach(([id, [h, m], decision, before, after], i) => {
    const row = { id, ts: iso(h, m) };
    const got = pipe.run("default", [row]);
    const what = `batch ${i + 1}: ${id} ${h}:${String(m).padStart(2, "0")}`;
    expect(got.decisions, what).toEqual([decision]);
    expect(got.watermark, what).toBe(before);
    expect(got.watermarkAfter, what).toBe(after);
    expect(got.counts, what).toEqual({
      input: 1,
      emitted: decision === "e" ? 1 : 0,
      duplicates: decision === "d" ? 1 : 0,
      late: decision === "l" ? 1 : 0,
      conflicts: 0,
      rejected: [],
    });
    expect(got.emitted, what).toEqual(decision === "e" ? [row] : []);
    for (const r of got.emitted) output.push(`${r.id}@${String(r.ts).slice(11, 16)}`);
    // the reference model agrees, step by step
    const want = model.runBatch("default", [row]);
    expect(want.decisions, `model, ${what}`).toEqual([decision]);
    expect([want.watermark, want.watermarkAfter], `model, ${what}`).toEqual([before, after]);
  });
  pipe.advanceAll();
  return { output, state: pipe.stateEntries(), pipe };
}

describe.each([1, 4])("%d partition(s)", (partitions) => {
  test("global (event time not in the key): output A, B, C, D", () => {
    const { output, state } = play("global", partitions, [
      ["A", [10, 0], "e", 0, hm(9, 55)],
      ["B", [10, 0], "e", hm(9, 55), hm(9, 55)],
      ["C", [10, 7], "e", hm(9, 55), hm(10, 2)],
      ["A", [10, 1], "l", hm(10, 2), hm(10, 2)], // 10:01 <= 10:02
      ["D", [10, 10], "e", hm(10, 2), hm(10, 5)],
      ["A", [10, 12], "d", hm(10, 5), hm(10, 7)], // A is kept forever
      ["E", [10, 7], "l", hm(10, 7), hm(10, 7)], // 10:07 == the watermark: late
    ]);
    expect(output).toEqual(["A@10:00", "B@10:00", "C@10:07", "D@10:10"]);
    // state grows forever
    expect(state).toEqual([
      ['["A"]', null],
      ['["B"]', null],
      ['["C"]', null],
      ['["D"]', null],
    ]);
  });

  test("within-watermark: output A, B, C, D, E, C@10:13", () => {
    const { output, state } = play("within-watermark", partitions, [
      ["A", [10, 0], "e", 0, hm(9, 55)], // A expires at 10:05
      ["B", [10, 0], "e", hm(9, 55), hm(9, 55)],
      ["C", [10, 7], "e", hm(9, 55), hm(10, 2)], // C expires at 10:12
      ["A", [10, 1], "l", hm(10, 2), hm(10, 2)],
      ["D", [10, 9], "e", hm(10, 2), hm(10, 4)],
      ["A", [10, 12], "d", hm(10, 4), hm(10, 7)], // A expires at 10:05, the watermark is 10:04
      ["E", [10, 17], "e", hm(10, 7), hm(10, 12)],
      ["C", [10, 13], "e", hm(10, 12), hm(10, 12)], // C expired when the watermark reached 10:12
    ]);
    expect(output).toEqual(["A@10:00", "B@10:00", "C@10:07", "D@10:09", "E@10:17", "C@10:13"]);
    expect(state).toEqual([
      ['["C"]', hm(10, 18)],
      ['["D"]', hm(10, 14)],
      ['["E"]', hm(10, 22)],
    ]);
  });

  test("event-time-key: output A, B, C@10:07, C@10:09, D, A@10:12", () => {
    const { output, state } = play("event-time-key", partitions, [
      ["A", [10, 0], "e", 0, hm(9, 55)],
      ["B", [10, 0], "e", hm(9, 55), hm(9, 55)],
      ["C", [10, 7], "e", hm(9, 55), hm(10, 2)],
      ["A", [10, 1], "l", hm(10, 2), hm(10, 2)],
      ["C", [10, 9], "e", hm(10, 2), hm(10, 4)], // (C, 10:09) is a new key
      ["D", [10, 10], "e", hm(10, 4), hm(10, 5)],
      ["A", [10, 12], "e", hm(10, 5), hm(10, 7)],
    ]);
    expect(output).toEqual(["A@10:00", "B@10:00", "C@10:07", "C@10:09", "D@10:10", "A@10:12"]);
    expect(state).toEqual([
      [`["A"]@${hm(10, 12)}`, hm(10, 12)],
      [`["C"]@${hm(10, 9)}`, hm(10, 9)],
      [`["D"]@${hm(10, 10)}`, hm(10, 10)],
    ]);
  });
});

test("the examples really spread over several partitions with P = 4", () => {
  const { pipe } = play("global", 4, [
    ["A", [10, 0], "e", 0, hm(9, 55)],
    ["B", [10, 0], "e", hm(9, 55), hm(9, 55)],
    ["C", [10, 7], "e", hm(9, 55), hm(10, 2)],
    ["D", [10, 10], "e", hm(10, 2), hm(10, 5)],
    ["E", [10, 17], "e", hm(10, 5), hm(10, 12)],
  ]);
  const used = pipe.partitions.map((p, i) => (p.keys.size > 0 ? i : -1)).filter((i) => i >= 0);
  expect(used.length).toBeGreaterThan(1);
});

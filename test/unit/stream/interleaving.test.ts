/**
 * Batches in flight together (DESIGN §2.3, §2.7), as explicit schedules through
 * the pure pipeline: a batch is judged by the watermark from before it began,
 * but a partition never goes back below a watermark it has already been given.
 */
import { describe, expect, test } from "vitest";
import { Pipeline } from "../pipeline";

const hm = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const NOW = hm(12, 0);

// Copies here differ in their event time (and n): volatile, so that they stay plain duplicates rather than conflicts (DESIGN §11).
function stream(mode: string, partitions: number) {
  return new Pipeline({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", mode, partitions, volatile: ["ts", "n"] }, NOW);
}

describe.each([1, 4])("%d partition(s)", (P) => {
  test("a batch begun under an old watermark meets a key that prompt eviction already forgot: its copy is late, not emitted again", () => {
    const pipe = stream("within-watermark", P);
    expect(pipe.run("s", [{ id: "A", ts: hm(10, 0) }]).decisions).toEqual(["e"]); // A expires at 10:05
    const x = pipe.begin("s", [{ id: "A", ts: hm(10, 3) }]); // judged by 9:55
    expect(x.watermark).toBe(hm(9, 55));
    expect(pipe.run("s", [{ id: "B", ts: hm(10, 20) }]).watermarkAfter).toBe(hm(10, 15));
    pipe.advanceAll(); // A is forgotten: 10:05 <= 10:15
    expect(pipe.stateEntries().map(([k]) => k)).toEqual(['["B"]']);
    for (const p of x.plan.subBatches.keys()) expect(pipe.apply(x, p)).toBe(hm(10, 15));
    const rx = pipe.commit(x);
    // 10:03 > 9:55, but the partition judges by max(10:15, 9:55): late. Emitting it would put
    // A@10:00 and A@10:03 in the output, 3 minutes apart with a 5-minute delay.
    expect(rx.decisions).toEqual(["l"]);
    expect(rx.watermark).toBe(hm(9, 55));
  });

  test("two batches under one watermark with the same key: the first to reach the partition emits, the other is a duplicate", () => {
    for (const order of [
      [0, 1],
      [1, 0],
    ]) {
      const pipe = stream("within-watermark", P);
      const batches = [pipe.begin("s", [{ id: "A", ts: hm(10, 0), n: 0 }]), pipe.begin("t", [{ id: "A", ts: hm(10, 2), n: 1 }])];
      for (const i of order) for (const p of batches[i].plan.subBatches.keys()) pipe.apply(batches[i], p);
      // commit in the opposite order to applying
      const results = [...order].reverse().map((i) => [i, pipe.commit(batches[i])] as const);
      const decided = new Map(results.map(([i, r]) => [i, r.decisions[0]]));
      expect(decided.get(order[0])).toBe("e");
      expect(decided.get(order[1])).toBe("d");
      expect(results.flatMap(([, r]) => r.emitted).map((r) => r.n)).toEqual([order[0]]);
    }
  });

  test("commits in either order end at the same watermark, and it never goes back", () => {
    const ends = [
      [0, 1],
      [1, 0],
    ].map((order) => {
      const pipe = stream("within-watermark", P);
      const b = [pipe.begin("s", [{ id: "A", ts: hm(10, 20) }]), pipe.begin("s", [{ id: "B", ts: hm(10, 10) }])];
      for (const x of b) for (const p of x.plan.subBatches.keys()) pipe.apply(x, p);
      const after = order.map((i) => pipe.commit(b[i]).watermarkAfter);
      expect(after[1]).toBeGreaterThanOrEqual(after[0]);
      return after[1];
    });
    expect(ends).toEqual([hm(10, 15), hm(10, 15)]);
  });

  test("event-time-key: a stale batch cannot re-emit (key, T) after it was evicted", () => {
    const pipe = stream("event-time-key", P);
    expect(pipe.run("s", [{ id: "A", ts: hm(10, 0) }]).decisions).toEqual(["e"]);
    const x = pipe.begin("s", [{ id: "A", ts: hm(10, 0) }]); // judged by 9:55, under which 10:00 is not late
    pipe.run("s", [{ id: "B", ts: hm(10, 20) }]);
    pipe.advanceAll(); // (A, 10:00) evicted at 10:15
    for (const p of x.plan.subBatches.keys()) pipe.apply(x, p);
    expect(pipe.commit(x).decisions).toEqual(["l"]);
  });
});

test("a partition no newer batch or eviction has reached judges a stale batch by the batch's own watermark", () => {
  const pipe = stream("within-watermark", 4);
  pipe.run("s", [{ id: "A", ts: hm(10, 0) }]); // A: partition 2 of 4, expires 10:05
  const x = pipe.begin("s", [{ id: "A", ts: hm(10, 3) }]); // judged by 9:55
  const y = pipe.run("s", [{ id: "b", ts: hm(10, 20) }]); // b: partition 1 of 4; the watermark goes to 10:15
  expect(y.watermarkAfter).toBe(hm(10, 15));
  expect([...x.plan.subBatches.keys()]).toEqual([2]);
  expect(pipe.partitions[2].watermark).toBe(0);
  expect(pipe.partitions[1].watermark).toBe(hm(9, 55));
  // no prompt eviction yet: A is still remembered in partition 2, so the copy is a duplicate (not late)
  expect(pipe.apply(x, 2)).toBe(hm(9, 55));
  expect(pipe.commit(x).decisions).toEqual(["d"]);
});

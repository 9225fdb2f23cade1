import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { partitionFor } from "../../../src/stream/partition-for";
import { stateKeyOf } from "../../../src/stream/key";
import { ownerOf, predecessors, routingKeyOf, successors } from "../../../src/stream/partition-map";

const counts = fc.integer({ min: 1, max: 1024 });

describe("the partition map", () => {
  it("owns a key where partitionFor puts it, so that version 1 is every stream's map as it was", () => {
    fc.assert(
      fc.property(fc.string(), counts, (key, n) => {
        expect(ownerOf(key, { partitions: n })).toBe(partitionFor(key, n));
      }),
    );
  });

  it("moves a key only to a successor of its old partition, and takes it only from a predecessor of its new one", () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { minLength: 1, maxLength: 50 }), counts, counts, (keys, from, to) => {
        for (const key of keys) {
          const p = ownerOf(key, { partitions: from });
          const q = ownerOf(key, { partitions: to });
          expect(successors(p, from, to)).toContain(q);
          expect(predecessors(q, from, to)).toContain(p);
        }
      }),
    );
  });

  it("relates old and new partitions both ways alike, each with gcd-many steps between", () => {
    fc.assert(
      fc.property(counts, counts, (from, to) => {
        const p = (from * 7 + 3) % from;
        const next = successors(p, from, to);
        expect(next.length).toBeGreaterThan(0);
        expect(next.every((q) => q >= 0 && q < to)).toBe(true);
        for (const q of next) expect(predecessors(q, from, to)).toContain(p);
        // Every new partition is some old one's successor: no key space is left without an owner.
        const all = new Set(Array.from({ length: Math.min(from, 64) }, (_, i) => successors(i, from, to)).flat());
        if (from <= 64) expect(all.size).toBe(to);
      }),
    );
  });

  it("splits 8 into 16 in two and merges 16 into 8 by pairs; 8 into 12 takes keys of two old partitions each", () => {
    expect(successors(3, 8, 16)).toEqual([3, 11]);
    expect(predecessors(11, 8, 16)).toEqual([3]);
    expect(successors(11, 16, 8)).toEqual([3]);
    expect(predecessors(3, 16, 8)).toEqual([3, 11]);
    expect(successors(1, 8, 12)).toEqual([1, 5, 9]);
    expect(predecessors(5, 8, 12)).toEqual([1, 5]);
  });
});

describe("routingKeyOf", () => {
  it("is the state key, or the key before its event time where the mode puts the time in it", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer(), (key, t) => {
        expect(routingKeyOf(key, t, "within-watermark")).toBe(key);
        expect(routingKeyOf(key, null, "global")).toBe(key);
        expect(routingKeyOf(stateKeyOf(key, t, true), t, "event-time-key")).toBe(key);
      }),
    );
    expect(() => routingKeyOf('["a"]@5', 6, "event-time-key")).toThrow(/does not end with its event time/);
  });
});

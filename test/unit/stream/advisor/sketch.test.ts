import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { exactQuantile, QuantileSketch } from "../../../../src/stream/advisor/sketch.ts";

const QS = [0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1];
/** relative error within α; a hair more for floating point at bucket edges */
const within = (estimate: number, exact: number, alpha: number) => Math.abs(estimate - exact) <= alpha * exact + 1e-9 * Math.max(1, exact);

const sketchOf = (values: readonly number[], alpha?: number) => {
  const s = new QuantileSketch(alpha);
  for (const v of values) s.add(v);
  return s;
};

describe("QuantileSketch", () => {
  test("every quantile is within the relative error of the exact one (whole ms, 0 included)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1e10 }), fc.integer({ min: 1, max: 1000 })), { minLength: 1, maxLength: 400 }),
        (values) => {
          const s = sketchOf(values);
          const sorted = [...values].sort((a, b) => a - b);
          for (const q of QS) {
            const exact = exactQuantile(sorted, q)!;
            const estimate = s.quantile(q)!;
            if (!within(estimate, exact, s.alpha)) throw new Error(`q=${q}: ${estimate} vs exact ${exact}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  test("the upper bound is never below the exact quantile, and at most γ above it", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1e10 })), { minLength: 1, maxLength: 300 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, q) => {
          const s = sketchOf(values);
          const exact = exactQuantile(
            [...values].sort((a, b) => a - b),
            q,
          )!;
          const bound = s.quantileUpperBound(q)!;
          expect(bound).toBeGreaterThanOrEqual(exact);
          expect(bound).toBeLessThanOrEqual(exact * ((1 + s.alpha) / (1 - s.alpha)) * (1 + 1e-9));
        },
      ),
      { numRuns: 300 },
    );
  });

  test("fractional values, other accuracies, and any q", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 1e-3, max: 1e9, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.constantFrom(0.005, 0.01, 0.02, 0.05),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, alpha, q) => {
          const s = sketchOf(values, alpha);
          const exact = exactQuantile(
            [...values].sort((a, b) => a - b),
            q,
          )!;
          expect(within(s.quantile(q)!, exact, alpha)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("count, exact min, max and zeros; empty answers null", () => {
    const empty = new QuantileSketch();
    expect([empty.count, empty.min, empty.max, empty.quantile(0.5)]).toEqual([0, null, null, null]);
    const s = sketchOf([0, 0, 5, 1234, 99]);
    expect([s.count, s.zeroCount, s.min, s.max]).toEqual([5, 2, 0, 1234]);
    expect(Math.abs(s.quantile(0.5)! - 5)).toBeLessThanOrEqual(0.05);
    expect(s.countAtMost(0)).toBe(2);
    expect(s.countAtMost(100)).toBe(4);
  });

  test("add with a count is the same as adding one at a time", () => {
    const a = new QuantileSketch();
    a.add(7, 3);
    a.add(0, 2);
    expect(a.toJSON()).toEqual(sketchOf([7, 7, 7, 0, 0]).toJSON());
  });

  test("merge equals one sketch of all the values; JSON round-trips", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1e9)), fc.array(fc.nat(1e9)), (xs, ys) => {
        const merged = sketchOf(xs);
        merged.merge(sketchOf(ys));
        expect(merged.toJSON()).toEqual(sketchOf([...xs, ...ys]).toJSON());
        const back = QuantileSketch.fromJSON(JSON.parse(JSON.stringify(merged)));
        expect(back.toJSON()).toEqual(merged.toJSON());
        for (const q of QS) expect(back.quantile(q)).toBe(merged.quantile(q));
      }),
      { numRuns: 100 },
    );
  });

  test("memory stays bounded: 1 ms to 100 days in ~1,200 buckets, whatever the count", () => {
    const s = new QuantileSketch();
    for (let i = 0; i < 200_000; i++) s.add(1 + Math.floor(Math.pow(8.64e9, Math.random())));
    expect(s.count).toBe(200_000);
    expect(s.size).toBeLessThanOrEqual(1_200);
    const bucketsFor = Math.ceil(Math.log(8.64e9) / Math.log(1.01 / 0.99)) + 1;
    expect(bucketsFor).toBeLessThanOrEqual(1_200);
  });

  test("refuses negative, NaN and infinite values, and merging other accuracies", () => {
    const s = new QuantileSketch();
    for (const bad of [-1, Number.NaN, Infinity]) expect(() => s.add(bad)).toThrow(RangeError);
    expect(() => s.merge(new QuantileSketch(0.02))).toThrow(RangeError);
    expect(() => new QuantileSketch(0)).toThrow(RangeError);
    expect(() => s.quantile(1.5)).toThrow(RangeError);
  });
});

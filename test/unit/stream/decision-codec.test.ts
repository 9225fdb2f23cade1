import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { Decision } from "../../../src/stream/dedup";
import { decodeDecisions, encodeDecisions } from "../../../src/stream/decision-codec";

describe("decision ledger encoding", () => {
  test("gaps and letters, in index order", () => {
    const d = new Map<number, Decision>([
      [4, "e"],
      [0, "e"],
      [3, "d"],
      [120, "l"],
    ]);
    expect(encodeDecisions(d)).toBe("0e3d1e116l");
    expect([...decodeDecisions("0e3d1e116l")]).toEqual([
      [0, "e"],
      [3, "d"],
      [4, "e"],
      [120, "l"],
    ]);
    expect(encodeDecisions(new Map())).toBe("");
  });

  test("round-trips any set of decisions, at about 2-3 bytes a row for dense indices", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.nat({ max: 100_000 }), { maxLength: 300 }),
        fc.array(fc.constantFrom<Decision>("e", "d", "l"), { minLength: 300, maxLength: 300 }),
        (indices, codes) => {
          const m = new Map<number, Decision>(indices.map((i, k) => [i, codes[k]]));
          const back = decodeDecisions(encodeDecisions(m));
          expect(new Map([...back].sort((a, b) => a[0] - b[0]))).toEqual(new Map([...m].sort((a, b) => a[0] - b[0])));
        },
      ),
    );
    const dense = new Map<number, Decision>(Array.from({ length: 1000 }, (_, i) => [i * 8, "e"]));
    expect(encodeDecisions(dense).length).toBeLessThanOrEqual(2 * 1000);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packNames } from "../../../src/partition/batch-names";

/** A stored chunk read back as the SQL in src/partition/receipts.ts reads it: an array, or the prefix joined to each rest. */
const readBack = (stored: string): string[] => {
  const v = JSON.parse(stored) as string[] | { p: string; b: string[] };
  return Array.isArray(v) ? v : v.b.map((rest) => v.p + rest);
};

describe("packNames", () => {
  it("reads back as the same names, never longer than the plain array", () => {
    const name = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }));
    const withPrefix = fc.tuple(fc.string({ unit: "grapheme", maxLength: 30 }), fc.array(name, { maxLength: 40 })).map(([p, rest]) => rest.map((r) => p + r));
    fc.assert(
      fc.property(fc.oneof(fc.array(name, { maxLength: 40 }), withPrefix), (names) => {
        const stored = packNames(names);
        expect(readBack(stored)).toEqual(names);
        expect(stored.length).toBeLessThanOrEqual(JSON.stringify(names).length);
        // Each part is valid text (no lone surrogate made by the cut).
        expect(stored).toBe(JSON.stringify(JSON.parse(stored)));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps a shared start once: batch ids of one source cost their last characters", () => {
    const names = Array.from({ length: 32 }, (_, i) => `webhook\norders-2026-12-07-${String(100 + i).padStart(6, "0")}`);
    const stored = packNames(names);
    const p = "webhook\norders-2026-12-07-0001";
    expect(JSON.parse(stored)).toEqual({ p, b: names.map((n) => n.slice(p.length)) });
    expect(stored.length).toBeLessThan(JSON.stringify(names).length / 4);
  });

  it("leaves names with no shared start as they were", () => {
    expect(packNames(["a\n1f0c", "b\n9e3d"])).toBe(JSON.stringify(["a\n1f0c", "b\n9e3d"]));
    expect(packNames([])).toBe("[]");
  });

  it("never cuts a surrogate pair", () => {
    const stored = packNames(["s\n\u{1F600}a-long-shared-start-1", "s\n\u{1F601}a-long-shared-start-2"]);
    expect(readBack(stored)).toEqual(["s\n\u{1F600}a-long-shared-start-1", "s\n\u{1F601}a-long-shared-start-2"]);
  });
});

import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { BucketFilters } from "../../../src/stream/bucket-filters";

/** Storage as a model: bucket → keys; `scans` counts the scans the filters asked for. */
function model() {
  const stored = new Map<number, Set<string>>();
  const scans: number[] = [];
  const filters = new BucketFilters((b) => (scans.push(b), [...(stored.get(b) ?? [])]));
  const store = (b: number, k: string) => {
    let s = stored.get(b);
    const isNew = !s;
    if (!s) stored.set(b, (s = new Set()));
    s.add(k);
    if (isNew) filters.open(b);
    filters.add(b, k);
  };
  return { stored, scans, filters, store };
}

describe("bucket filters (src/stream/bucket-filters.ts)", () => {
  test("never answer 'absent' for a key a live bucket holds, whatever was stored before the filters, added after, or forgotten (property)", () => {
    const key = fc.integer({ min: 0, max: 300 }).map((i) => `["k${i}"]`);
    const op = fc.oneof(
      fc.record({ kind: fc.constant("store" as const), b: fc.integer({ min: 0, max: 5 }), k: key }),
      fc.record({ kind: fc.constant("drop" as const), b: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ kind: fc.constant("ask" as const), keys: fc.array(key, { maxLength: 20 }) }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), key), { maxLength: 200 }), fc.array(op, { maxLength: 80 }), (before, ops) => {
        const m = model();
        // Stored before the object knew of filters (a restart): only a scan can know them.
        for (const [b, k] of before) {
          if (!m.stored.has(b)) m.stored.set(b, new Set());
          m.stored.get(b)!.add(k);
        }
        for (const o of ops) {
          if (o.kind === "store") m.store(o.b, o.k);
          else if (o.kind === "drop") m.stored.delete(o.b), m.filters.drop(o.b);
          else {
            const live = [...m.stored.keys()];
            const got = m.filters.maybeHeld(o.keys, live);
            for (const k of o.keys) {
              const holders = live.filter((b) => m.stored.get(b)!.has(k));
              if (holders.length > 0) expect(got.keys).toContain(k);
              for (const b of holders) expect(got.buckets).toContain(b);
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  test("answer 'absent' for nearly every key no bucket holds (~0.3% false 'maybe' per bucket), and scan a bucket once", () => {
    const m = model();
    for (let b = 0; b < 9; b++) {
      const s = new Set<string>();
      for (let i = 0; i < 5_000; i++) s.add(`["evt_${b}_${i}"]`);
      m.stored.set(b, s);
    }
    const live = [...m.stored.keys()];
    const absent = Array.from({ length: 10_000 }, (_, i) => `["new_${i}"]`);
    const got = m.filters.maybeHeld(absent, live);
    // Nine buckets at ~0.3% each: about 3% of absent keys need a probe, against all of them in every bucket without filters.
    expect(got.keys.length / absent.length).toBeLessThan(0.05);
    expect(m.scans.sort()).toEqual(live);
    // Held keys are found, each in its own bucket only (mostly), with no scan again.
    const held = m.filters.maybeHeld(['["evt_3_17"]', '["evt_8_4999"]'], live);
    expect(held.keys).toEqual(['["evt_3_17"]', '["evt_8_4999"]']);
    expect(held.buckets).toContain(3);
    expect(held.buckets).toContain(8);
    expect(m.scans.length).toBe(9);
  });

  test("a bucket that keeps filling grows its filter instead of losing precision", () => {
    const m = model();
    for (let i = 0; i < 50_000; i++) m.store(0, `["k${i}"]`);
    const absent = Array.from({ length: 10_000 }, (_, i) => `["absent_${i}"]`);
    expect(m.filters.maybeHeld(absent, [0]).keys.length / absent.length).toBeLessThan(0.01);
    expect(m.scans).toEqual([]); // opened empty: never scanned
    expect(m.filters.bytes).toBeLessThan(50_000 * 5); // 12–22 bits per key, with the doubling layers' slack
  });
});

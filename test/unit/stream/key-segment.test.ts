import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { digestWord, int64Decimal } from "../../../src/stream/content";
import { encodeSegment, keyBytes, Segment, segmentsIn, type DropEntry, type KeyEntry } from "../../../src/stream/key-segment";
import { SegmentIndex, segmentFilter } from "../../../src/stream/segment-index";

const int64 = fc
  .tuple(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }))
  .map(([h, l]) => int64Decimal(h, l));
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

function entries(hashed: boolean, withBuckets: boolean) {
  const key = hashed ? int64 : fc.string({ unit: "grapheme", maxLength: 30 });
  return fc.uniqueArray(
    fc.record({
      key,
      b: withBuckets ? fc.integer({ min: -50, max: 5_000 }) : fc.constant(7),
      e: maybe(fc.integer({ min: 0, max: 2 ** 40 })),
      t: maybe(fc.integer({ min: -(2 ** 45), max: 2 ** 45 })),
      d: maybe(int64),
      n: maybe(fc.integer({ min: 0, max: 2 ** 32 })),
      dropped: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 31 })),
    }),
    { selector: (e) => e.key, maxLength: 60 },
  );
}

const byKey = (hashed: boolean) => (a: { key: string }, b: { key: string }) => {
  const x = keyBytes(hashed, a.key);
  const y = keyBytes(hashed, b.key);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
};

describe("key segments", () => {
  for (const hashed of [true, false]) {
    for (const withBuckets of [false, true]) {
      it(`read back exactly what was written, in key order, each key found by binary search (${hashed ? "hashed" : "text"} keys${withBuckets ? ", a bucket per entry" : ""})`, () => {
        fc.assert(
          fc.property(entries(hashed, withBuckets), entries(hashed, withBuckets), fc.array(int64, { maxLength: 10 }), (kept, dropsIn, absent) => {
            const drops: DropEntry[] = dropsIn.map((d) => ({ key: d.key, b: d.b, n: d.n, dropped: Math.max(1, d.dropped) }));
            const seg = new Segment(encodeSegment(hashed, kept, drops, withBuckets));
            const bucket = withBuckets ? 0 : 7;
            // A digest is kept as its 32-bit word (digestWord); a word written again is the same word.
            kept = kept.map((e) => ({ ...e, d: e.d === null ? null : String(digestWord(e.d)) }));
            expect([...seg.kept.entries(bucket)]).toEqual([...kept].sort(byKey(hashed)));
            expect([...new Segment(encodeSegment(hashed, kept, drops, withBuckets)).kept.entries(bucket)]).toEqual([...kept].sort(byKey(hashed)));
            expect(Segment.dropsOf(seg.drops, bucket)).toEqual([...drops].sort(byKey(hashed)));
            for (const e of kept) expect(seg.kept.entry(seg.kept.indexOf(keyBytes(hashed, e.key)), bucket)).toEqual(e);
            const held = new Set(kept.map((e) => e.key));
            for (const k of hashed ? absent : absent.map((a) => `absent ${a}`)) if (!held.has(k)) expect(seg.kept.indexOf(keyBytes(hashed, k))).toBe(-1);
          }),
        );
      });
    }
  }

  for (const hashed of [true, false]) {
    it(`many keys: compact keys (${hashed ? "a first-byte directory" : "lengths, an offset a block"}) are found, listed after any key, and read back (property)`, () => {
      // (Text keys of a few shapes: unique arrays of hundreds of free strings take fast-check minutes to draw.)
      const key = hashed ? int64 : fc.tuple(fc.constantFrom("", "k", "é-", "日本/", "x".repeat(200)), fc.nat()).map(([a, n]) => `${a}${n}`);
      fc.assert(
        fc.property(fc.uniqueArray(key, { minLength: 320, maxLength: 1_500 }), fc.array(key, { maxLength: 30 }), (keys, probes) => {
          const kept: KeyEntry[] = keys.map((k, i) => ({ key: k, b: 7, e: i, t: null, d: i % 3 ? String(i) : null, n: i % 50, dropped: i % 7 }));
          const bytes = encodeSegment(hashed, kept, []);
          expect(bytes[1] & 128).toBe(128); // F_COMPACT
          const seg = new Segment(bytes);
          const sorted = [...kept].sort(byKey(hashed));
          expect([...seg.kept.entries(7)]).toEqual(sorted);
          for (const e of kept) expect(seg.kept.indexOf(keyBytes(hashed, e.key))).toBe(sorted.indexOf(e));
          for (const p of [...probes, ...keys.slice(0, 10)]) {
            const pb = keyBytes(hashed, p);
            const want = sorted.filter((e) => byKey(hashed)(e, { key: p }) <= 0).length;
            expect(seg.kept.after(pb)).toBe(want);
            if (!keys.includes(p)) expect(seg.kept.indexOf(pb)).toBe(-1);
          }
          expect(seg.kept.after(new Uint8Array(0))).toBe(0); // (no key here is empty)
        }),
        { numRuns: 10 },
      );
    });
  }

  it("a digest's word is its low 32 bits, unsigned, and a word's word is itself (property)", () => {
    fc.assert(
      fc.property(int64, (d) => {
        const w = digestWord(d);
        expect(w).toBe(Number(BigInt.asUintN(32, BigInt(d))));
        expect(digestWord(String(w))).toBe(w);
      }),
    );
    expect(digestWord("-1")).toBe(4294967295);
    expect(digestWord("0")).toBe(0);
    expect(digestWord("4294967296")).toBe(0);
  });

  it("a version 1 segment (64-bit digests, before 32-bit words) still reads, its digests as their words", () => {
    // Written by encodeSegment before version 2: three hashed keys (two with digests), and one drop.
    const v1 =
      "017d030000000000408f40020000000000001440010000000000001c4001000000000000002a7ce66c50e28400009000000000000000e9030000010001000102000105002bdc545d6b4b870000000000000000a0000000000000000102020141010000000000000040000000000000000007010004";
    const seg = new Segment(new Uint8Array(Buffer.from(v1, "hex")));
    expect([...seg.kept.entries(3)]).toEqual([
      { key: "42", b: 3, e: 2000, t: 5, d: String(digestWord("12345678901234567")), n: 8, dropped: 0 },
      { key: "9000000000000000000", b: 3, e: null, t: null, d: null, n: null, dropped: 0 },
      { key: "-8070450532247928832", b: 3, e: 1000, t: 5, d: String(digestWord("-6917529027641081856")), n: 7, dropped: 2 },
    ]);
    expect(Segment.dropsOf(seg.drops, 3)).toEqual([{ key: "7", b: 3, n: 2, dropped: 4 }]);
    // Written again, it is version 2: 4 bytes less per digest, the same entries.
    const again = encodeSegment(true, [...seg.kept.entries(3)], Segment.dropsOf(seg.drops, 3));
    expect(again[0]).toBe(2);
    expect(again.length).toBe(v1.length / 2 - 3 * 4); // every entry has a digest slot (a null one is zero, marked in the null bits)
    expect([...new Segment(again).kept.entries(3)]).toEqual([...seg.kept.entries(3)]);
  });

  it("follow one another in one buffer (the open segment's chunks)", () => {
    const a: KeyEntry = { key: "a", b: 1, e: 5, t: 10, d: null, n: 1, dropped: 0 };
    const b: KeyEntry = { key: "b", b: 2, e: null, t: null, d: String(digestWord("-5")), n: null, dropped: 3 };
    const one = encodeSegment(false, [a], [], true);
    const two = encodeSegment(false, [b], [{ key: "a", b: 1, n: 1, dropped: 2 }], true);
    const both = new Uint8Array(one.length + two.length);
    both.set(one);
    both.set(two, one.length);
    const read = [...segmentsIn(both)];
    expect(read.map((s) => [...s.kept.entries()])).toEqual([[a], [b]]);
    expect(Segment.dropsOf(read[1].drops)).toEqual([{ key: "a", b: 1, n: 1, dropped: 2 }]);
  });

  it("cost about 12 bytes per hashed key with an expiry, and the key's length + ~5 as text", () => {
    const n = 4_000;
    const hashedKeys: KeyEntry[] = Array.from({ length: n }, (_, i) => ({
      key: int64Decimal((i * 2654435761) | 0, (i * 40503) | 0),
      b: 3,
      e: (i * 997) % 1_800_000,
      t: null,
      d: null,
      n: 1 + Math.floor(i / 60),
      dropped: i % 5 === 0 ? 1 : 0,
    }));
    const hashedBytes = encodeSegment(true, hashedKeys, []).length / n;
    expect(hashedBytes).toBeLessThan(13);
    const text = hashedKeys.map((e, i) => ({ ...e, key: `evt_${String(i).padStart(12, "0")}`, t: 3_600_000 }));
    const textBytes = encodeSegment(false, text, []).length / n;
    expect(textBytes - 16).toBeLessThan(7); // the lag behind the expiry is one value for all: no byte
  });
});

describe("the segment index", () => {
  it("never says absent for a key a segment holds, and rarely maybe for one it doesn't", () => {
    const index = new SegmentIndex();
    const keys = (s: number) => Array.from({ length: 1_000 }, (_, i) => `k${s}-${i}`);
    const filterOf = (ks: string[]) =>
      segmentFilter(
        false,
        ks.map((k) => keyBytes(false, k)),
        ks.length,
      );
    for (let s = 1; s <= 20; s++) index.add({ s, b: s % 3, n: 1_000, bytes: 0, filter: filterOf(keys(s)) });
    const maybe = index.maybeHeld(false, [...keys(4), ...keys(17)]);
    const found = new Map([...maybe].map(([seg, ks]) => [seg.s, ks]));
    expect(found.get(4)).toEqual(expect.arrayContaining(keys(4)));
    expect(found.get(17)).toEqual(expect.arrayContaining(keys(17)));
    const absent = Array.from({ length: 5_000 }, (_, i) => `new-${i}`);
    const falseMaybes = [...index.maybeHeld(false, absent).values()].reduce((n, ks) => n + ks.length, 0);
    expect(falseMaybes).toBeLessThan(20); // 5,000 keys × 20 segments at ~4·10⁻⁵ each: ~4 expected
    index.dropBucket(1);
    expect([...index.maybeHeld(false, keys(4)).keys()].map((s) => s.s)).not.toContain(4);
    expect(index.maxS()).toBe(20);
  });
});

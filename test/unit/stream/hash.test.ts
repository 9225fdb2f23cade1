import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { murmur3 } from "../../../src/lib/murmur3";
import { PARTITION_SEED, partitionFor } from "../../../src/stream/partition-for";
import { encodeKey } from "../../../src/stream/key";

const utf8 = (s: string) => new TextEncoder().encode(s);

/**
 * An independent MurmurHash3_x86_32, written from the published algorithm
 * (Austin Appleby, smhasher MurmurHash3.cpp) in the pre-Math.imul style: 32-bit
 * multiplication by 16-bit halves, blocks read through a little-endian DataView.
 */
function referenceMurmur3(data: Uint8Array, seed: number): number {
  const mul32 = (a: number, b: number) => ((((a & 0xffff) * b) >>> 0) + ((((a >>> 16) * b) & 0xffff) << 16)) >>> 0;
  const rotl32 = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
  const fmix32 = (h: number) => {
    h = (h ^ (h >>> 16)) >>> 0;
    h = mul32(h, 0x85ebca6b);
    h = (h ^ (h >>> 13)) >>> 0;
    h = mul32(h, 0xc2b2ae35);
    return (h ^ (h >>> 16)) >>> 0;
  };
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const nblocks = Math.floor(data.length / 4);
  let h1 = seed >>> 0;
  for (let i = 0; i < nblocks; i++) {
    let k1 = view.getUint32(i * 4, true);
    k1 = mul32(k1, c1);
    k1 = rotl32(k1, 15);
    k1 = mul32(k1, c2);
    h1 = (h1 ^ k1) >>> 0;
    h1 = rotl32(h1, 13);
    h1 = (mul32(h1, 5) + 0xe6546b64) >>> 0;
  }
  const tail = nblocks * 4;
  let k1 = 0;
  const rem = data.length & 3;
  if (rem >= 3) k1 = (k1 ^ (data[tail + 2] << 16)) >>> 0;
  if (rem >= 2) k1 = (k1 ^ (data[tail + 1] << 8)) >>> 0;
  if (rem >= 1) {
    k1 = (k1 ^ data[tail]) >>> 0;
    k1 = mul32(k1, c1);
    k1 = rotl32(k1, 15);
    k1 = mul32(k1, c2);
    h1 = (h1 ^ k1) >>> 0;
  }
  h1 = (h1 ^ data.length) >>> 0;
  return fmix32(h1);
}

/**
 * Known MurmurHash3_x86_32 values. Cross-checked with Python's `mmh3` 5.3.0
 * (`mmh3.hash(s.encode("utf-8"), seed, signed=False)`), a binding of the C++
 * reference implementation.
 */
const VECTORS: [string, number, number][] = [
  ["", 0, 0],
  ["", 1, 0x514e28b7],
  ["hello", 0, 0x248bfa47],
  ["The quick brown fox jumps over the lazy dog", 0, 0x2e4ff723],
  ["a", 0, 1009084850],
  ["ab", 0, 2613040991],
  ["abc", 0, 3017643002],
  ["abcd", 0, 1139631978],
  ["abcde", 42, 2933533680],
  ['["A"]', 42, 3289911434],
  ['[42,"acme"]', 42, 2929150245],
  ["héllo wörld ☃", 7, 93378021],
  ["\u00ff", 0, 2978568462],
];

describe("murmur3 (x86, 32-bit)", () => {
  test.each(VECTORS)("%j seed %d → %d", (text, seed, expected) => {
    expect(murmur3(utf8(text), seed)).toBe(expected);
    expect(referenceMurmur3(utf8(text), seed)).toBe(expected);
  });

  test("hello (seed 0) is 613153351, the published value", () => {
    expect(murmur3(utf8("hello"))).toBe(613153351);
  });

  test("the default seed is 0", () => {
    expect(murmur3(utf8("The quick brown fox jumps over the lazy dog"))).toBe(0x2e4ff723);
  });

  test("returns an unsigned 32-bit integer", () => {
    // 0xb16b1cc9 > 2^31: a signed implementation would return a negative number here.
    expect(murmur3(utf8("\u00ff"), 0)).toBe(2978568462);
    expect(murmur3(utf8("\u00ff"), 0)).toBeGreaterThan(2 ** 31);
  });

  test("agrees with the independent reference on random bytes and seeds (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat({ max: 0xffffffff }), (bytes, seed) => {
        const h = murmur3(bytes, seed);
        expect(h).toBe(referenceMurmur3(bytes, seed));
        expect(Number.isInteger(h) && h >= 0 && h <= 0xffffffff).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  test("reads bytes at any offset of a shared buffer", () => {
    const big = utf8("xxhelloxx");
    expect(murmur3(big.subarray(2, 7), 0)).toBe(613153351);
  });
});

describe("partitionFor: the stability contract", () => {
  test("the seed is 42 (Spark's HashPartitioning seed)", () => {
    expect(PARTITION_SEED).toBe(42);
  });

  /**
   * These numbers are the on-disk layout of every stream: a key must route to the
   * same partition forever. If this test fails, the hash changed; do not update
   * the numbers, restore the hash. Values computed independently with Python's
   * mmh3: mmh3.hash(json, 42, signed=False) % P.
   */
  const PINNED: [key: string, hash: number, partitions: { 1: number; 4: number; 8: number; 16: number }][] = [
    [encodeKey(["A"]), 3289911434, { 1: 0, 4: 2, 8: 2, 16: 10 }],
    [encodeKey(["B"]), 2662336122, { 1: 0, 4: 2, 8: 2, 16: 10 }],
    [encodeKey([42, "acme"]), 2929150245, { 1: 0, 4: 1, 8: 5, 16: 5 }],
    [encodeKey(["42"]), 2347362570, { 1: 0, 4: 2, 8: 2, 16: 10 }],
    [encodeKey([42]), 867260426, { 1: 0, 4: 2, 8: 2, 16: 10 }],
    [encodeKey(["evt_1"]), 2952958028, { 1: 0, 4: 0, 8: 4, 16: 12 }],
    [encodeKey([true]), 600641511, { 1: 0, 4: 3, 8: 7, 16: 7 }],
    [encodeKey(["héllo"]), 3406381904, { 1: 0, 4: 0, 8: 0, 16: 0 }],
    [encodeKey(["acme", 7, false]), 3596999695, { 1: 0, 4: 3, 8: 7, 16: 15 }],
    [encodeKey(["b"]), 2753504609, { 1: 0, 4: 1, 8: 1, 16: 1 }],
    [encodeKey(["c"]), 527181917, { 1: 0, 4: 1, 8: 5, 16: 13 }],
    [encodeKey(["order-1001"]), 532256147, { 1: 0, 4: 3, 8: 3, 16: 3 }],
    [encodeKey(["ünïcödé ☃"]), 3835095964, { 1: 0, 4: 0, 8: 4, 16: 12 }],
  ];

  test.each(PINNED)("%s", (key, hash, partitions) => {
    expect(murmur3(utf8(key), 42)).toBe(hash);
    for (const P of [1, 4, 8, 16] as const) {
      expect(partitionFor(key, P), `P=${P}`).toBe(partitions[P]);
    }
  });

  test("the canonical encodings the vectors stand for", () => {
    expect(PINNED.map(([k]) => k)).toEqual([
      '["A"]',
      '["B"]',
      '[42,"acme"]',
      '["42"]',
      "[42]",
      '["evt_1"]',
      "[true]",
      '["héllo"]',
      '["acme",7,false]',
      '["b"]',
      '["c"]',
      '["order-1001"]',
      '["ünïcödé ☃"]',
    ]);
  });

  test("is murmur3(utf8(key), 42) mod P, unsigned (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), fc.integer({ min: 1, max: 1024 }), (key, P) => {
        const p = partitionFor(key, P);
        expect(Number.isInteger(p)).toBe(true);
        expect(p).toBeGreaterThanOrEqual(0);
        expect(p).toBeLessThan(P);
        expect(p).toBe(referenceMurmur3(utf8(key), 42) % P);
      }),
      { numRuns: 1000 },
    );
  });

  test("P = 1 routes everything to partition 0", () => {
    fc.assert(
      fc.property(fc.string(), (key) => partitionFor(key, 1) === 0),
      { numRuns: 200 },
    );
  });

  test("spreads keys over all partitions", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(partitionFor(encodeKey([`evt_${i}`]), 8));
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

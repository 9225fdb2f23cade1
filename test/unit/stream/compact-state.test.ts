import fc from "fast-check";
import { describe, expect, it } from "vitest";
// @ts-expect-error no types: the reference implementation, as an oracle
import murmur from "murmurhash3js-revisited";
import { murmur3x86_128 } from "../../../src/lib/murmur3";
import { keyHash64, keyHashLabel } from "../../../src/stream/key-hash";
import { bucketAtWatermark, bucketOf, bucketWidthFor, MIN_BUCKET_WIDTH_MS } from "../../../src/stream/expiry-buckets";

const bytes = (s: string) => new TextEncoder().encode(s);
const hex = (words: number[]) => words.map((w) => w.toString(16).padStart(8, "0")).join("");

describe("keyHash64", () => {
  it("is MurmurHash3_x86_128 as the reference computes it, for every tail length and multi-byte text", () => {
    for (const s of ["", "a", "ab", "abc", "abcd", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnopq", '["evt_1",1704067200000]', "ünïcødé 🎉 キー"]) {
      expect(hex(murmur3x86_128(bytes(s))), s).toBe(murmur.x86.hash128(bytes(s)));
    }
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 80 }), fc.integer({ min: 0, max: 0xffffffff }), (s, seed) => {
        expect(hex(murmur3x86_128(bytes(s), seed))).toBe(murmur.x86.hash128(bytes(s), seed));
      }),
    );
  });

  it("is fixed forever: these vectors are stored state", () => {
    expect(keyHash64('["evt_1"]')).toBe(keyHash64('["evt_1"]'));
    expect([keyHash64(""), keyHash64('["evt_1"]'), keyHash64('["a",1]')]).toMatchInlineSnapshot(`
      [
        "0",
        "-9036731592821028261",
        "969514589512338944",
      ]
    `);
    expect(keyHashLabel('["evt_1"]')).toMatch(/^#[0-9a-f]{16}$/);
  });

  it("reads h1·2^32 + h2 as a signed 64-bit integer, which the label shows in hex", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const n = BigInt(keyHash64(s));
        expect(n >= -(2n ** 63n) && n < 2n ** 63n).toBe(true);
        expect(BigInt.asUintN(64, n).toString(16).padStart(16, "0")).toBe(keyHashLabel(s).slice(1));
      }),
    );
  });
});

describe("expiry buckets", () => {
  const within = (delay: number) => ({ mode: "within-watermark" as const, delay, hasEventTime: true });

  it("an eighth of the delay wide, at least a second; global mode has one bucket that never expires", () => {
    expect(bucketWidthFor(within(2 * 3_600_000))).toBe(15 * 60_000);
    expect(bucketWidthFor(within(10_000))).toBe(1_250);
    expect(bucketWidthFor(within(0))).toBe(MIN_BUCKET_WIDTH_MS);
    expect(bucketWidthFor({ mode: "global", delay: 0, hasEventTime: false })).toBe(0);
    expect(bucketOf(null, 60_000)).toBe(0);
    expect(bucketOf(123_456, 0)).toBe(0);
  });

  it("every bucket below the watermark's has expired whole; the watermark's bucket holds its boundary", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2e12 }), fc.integer({ min: 0, max: 2e12 }), fc.integer({ min: 1, max: 1e8 }), (wm, e, width) => {
        const b = bucketOf(e, width),
          at = bucketAtWatermark(wm, width);
        if (b < at) expect(e).toBeLessThanOrEqual(wm); // a whole bucket below: all expired
        if (b > at) expect(e).toBeGreaterThan(wm); // above: none expired
      }),
    );
  });
});

import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { Bloom, bloomHash } from "../../../src/lib/bloom";

describe("Bloom filter (src/lib/bloom.ts)", () => {
  test("never answers 'absent' for a key it holds, and reads back from its bytes the same (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string(), { minLength: 1, maxLength: 300 }),
        fc.array(fc.string(), { maxLength: 50 }),
        fc.integer({ min: 4, max: 20 }),
        (keys, others, bitsPerKey) => {
          const b = new Bloom(keys.length, bitsPerKey);
          for (const k of keys) b.add(bloomHash(k));
          const back = Bloom.fromBytes(b.toBytes(), b.count);
          expect(back.count).toBe(keys.length);
          for (const k of keys) expect(back.has(bloomHash(k))).toBe(true);
          for (const k of [...keys, ...others]) expect(back.has(bloomHash(k))).toBe(b.has(bloomHash(k)));
        },
      ),
    );
  });

  test("its false 'maybe' rate is about what its bits per key promise (16 bits: well under 0.5%)", () => {
    const b = new Bloom(4_096, 16);
    for (let i = 0; i < 4_096; i++) b.add(bloomHash(`s\nbatch-${i}`));
    let maybe = 0;
    for (let i = 0; i < 100_000; i++) if (b.has(bloomHash(`s\nother-${i}`))) maybe++;
    expect(maybe / 100_000).toBeLessThan(0.005);
    expect(b.toBytes().byteLength).toBe((4_096 * 16) / 8);
  });

  test("stored bytes are little-endian words, whatever the platform", () => {
    const b = new Bloom(1, 32);
    b.bits[0] = 0x04030201;
    expect([...b.toBytes()]).toEqual([1, 2, 3, 4]);
    expect(Bloom.fromBytes(new Uint8Array([1, 2, 3, 4]), 1).bits[0]).toBe(0x04030201);
  });
});

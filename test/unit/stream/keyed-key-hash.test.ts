import { describe, expect, test } from "vitest";
import { keyHash64 } from "../../../src/stream/key-hash";
import { keyedKeyHash64, keyedKeyHashLabel, newHashSecret, sipHash24 } from "../../../src/stream/keyed-key-hash";

const SECRET = "000102030405060708090a0b0c0d0e0f";
const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i);

describe("the keyed key hash (SipHash-2-4)", () => {
  test("matches the SipHash paper's vectors (key 00..0f, messages 00..n-1)", () => {
    const hex = (x: { h: number; l: number }) => (x.h >>> 0).toString(16).padStart(8, "0") + (x.l >>> 0).toString(16).padStart(8, "0");
    expect(hex(sipHash24(SECRET, bytes(15)))).toBe("a129ca6149be45e5");
    expect(hex(sipHash24(SECRET, bytes(0)))).toBe("726fdb47dd0e0e31");
    expect(hex(sipHash24(SECRET, bytes(8)))).toBe("93f5f5799a932462");
  });

  test("is stored as the signed 64-bit integer of its bits, in decimal, as the unkeyed hash is; and labelled as it is", () => {
    for (const key of ['["a"]', '["evt_1"]', "x".repeat(300), '["ü"]']) {
      const { h, l } = sipHash24(SECRET, new TextEncoder().encode(key));
      expect(keyedKeyHash64(SECRET, key)).toBe(BigInt.asIntN(64, (BigInt(h >>> 0) << 32n) | BigInt(l >>> 0)).toString());
      expect(keyedKeyHashLabel(SECRET, key)).toBe(
        `#${BigInt.asUintN(64, BigInt(keyedKeyHash64(SECRET, key)))
          .toString(16)
          .padStart(16, "0")}`,
      );
    }
  });

  test("another secret gives other hashes, and none is the unkeyed one", () => {
    const a = newHashSecret();
    const b = newHashSecret();
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(a).not.toBe(b);
    const keys = Array.from({ length: 200 }, (_, i) => `["k${i}"]`);
    const under = (s: string) => keys.map((k) => keyedKeyHash64(s, k));
    const [ha, hb, unkeyed] = [under(a), under(b), keys.map(keyHash64)];
    expect(new Set(ha).size).toBe(keys.length);
    expect(ha.filter((h, i) => h === hb[i] || h === unkeyed[i])).toEqual([]);
  });

  test("a malformed secret is refused, not read as another key", () => {
    expect(() => keyedKeyHash64("not-a-secret", '["a"]')).toThrow(/32 lower-case hex digits/);
  });
});

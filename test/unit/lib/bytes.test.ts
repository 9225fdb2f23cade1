import fc from "fast-check";
import { expect, test } from "vitest";
import { createHmac } from "node:crypto";
import { constantTimeEqual, fromBase64, fromHex, hmacSha256, toBase64 } from "../../../src/lib/bytes";

const bytes = fc.uint8Array({ maxLength: 64 });
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

test("constantTimeEqual agrees with plain equality (property)", () => {
  fc.assert(
    fc.property(bytes, bytes, fc.nat(), (a, b, flip) => {
      expect(constantTimeEqual(a, b)).toBe(hex(a) === hex(b));
      expect(constantTimeEqual(a, Uint8Array.from(a))).toBe(true);
      if (a.length > 0) {
        const c = Uint8Array.from(a);
        c[flip % c.length] ^= 1 << (flip % 8);
        expect(constantTimeEqual(a, c)).toBe(false);
      }
    }),
  );
});

test("hex and base64 round-trip and agree with Node's Buffer (property)", () => {
  fc.assert(
    fc.property(bytes, (b) => {
      expect(fromHex(hex(b))).toEqual(b.length === 0 ? null : b); // an empty string is no MAC
      expect(fromHex(hex(b).toUpperCase())).toEqual(b.length === 0 ? null : b);
      expect(toBase64(b)).toBe(Buffer.from(b).toString("base64"));
      expect(fromBase64(toBase64(b))).toEqual(b);
    }),
  );
});

test.each(["abc", "zz", "0x00", " 00"])("fromHex refuses %j", (text) => {
  expect(fromHex(text)).toBeNull();
});

test.each(["a b", "-_", "abc===", "=abc"])("fromBase64 refuses %j", (text) => {
  expect(fromBase64(text)).toBeNull();
});

test("hmacSha256 is node:crypto's HMAC-SHA256 for any key and message, with the imported keys kept and started over (property)", async () => {
  const want = (key: Uint8Array, msg: Uint8Array) => createHmac("sha256", key).update(msg).digest("hex");
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 80 }), bytes, async (key, msg) => {
      expect(hex(await hmacSha256(key, msg))).toBe(want(key, msg));
      expect(hex(await hmacSha256(Uint8Array.from(key), msg))).toBe(want(key, msg)); // the kept key, found by its bytes
    }),
  );
  // More keys than are kept: each still signs with its own.
  const keys = Array.from({ length: 300 }, (_, i) => new TextEncoder().encode(`secret-${i}`));
  const msg = new TextEncoder().encode("body");
  for (const key of [...keys, ...keys.slice(0, 5)]) expect(hex(await hmacSha256(key, msg))).toBe(want(key, msg));
});

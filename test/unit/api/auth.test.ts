import { createHash } from "node:crypto";
import fc from "fast-check";
import { expect, test } from "vitest";
import { isAdminToken, sameSecret } from "../../../src/api/auth";

test("sameSecret: equal secrets only, whatever their lengths and characters (property), as comparing their SHA-256s is", async () => {
  const text = fc.string({ unit: "binary", maxLength: 80 });
  await fc.assert(
    fc.asyncProperty(text, text, async (a, b) => {
      const want = createHash("sha256").update(a).digest("hex") === createHash("sha256").update(b).digest("hex");
      expect(await sameSecret(a, b)).toBe(want);
      expect(await sameSecret(a, a)).toBe(true);
    }),
  );
  for (const [a, b] of [
    ["tok", "tok"],
    ["tok", "tok2"],
    ["", ""],
    ["", "x"],
    ["é", "e"],
    ["a".repeat(100), "a".repeat(100)],
    ["a".repeat(100), `${"a".repeat(99)}b`],
  ]) {
    expect(await sameSecret(a, b), `${a} / ${b}`).toBe(a === b);
  }
});

test("isAdminToken: the admin token or the previous one, and a rotation is seen at once", async () => {
  expect(await isAdminToken("new", { ADMIN_TOKEN: "new", ADMIN_TOKEN_PREVIOUS: "old" })).toBe(true);
  expect(await isAdminToken("old", { ADMIN_TOKEN: "new", ADMIN_TOKEN_PREVIOUS: "old" })).toBe(true);
  expect(await isAdminToken("old", { ADMIN_TOKEN: "new" })).toBe(false);
  expect(await isAdminToken("new", { ADMIN_TOKEN: "newer" })).toBe(false);
  for (let i = 0; i < 20; i++) expect(await isAdminToken(`t${i}`, { ADMIN_TOKEN: `t${i}` })).toBe(true); // past the kept digests
  await expect(isAdminToken("x", {})).rejects.toThrow(/ADMIN_TOKEN/);
});

import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { batchIdFor, PROVIDER_TYPES } from "../../../src/webhooks";

/** What Idempotency-Key accepts (src/api/ingest.ts); a derived batch id must pass it too. */
const BATCH_ID = /^[\x21-\x7e]{1,255}$/;
const hashed = (provider: string) => new RegExp(`^${provider}:sha256:[0-9a-f]{64}$`);

describe("batchIdFor", () => {
  test("a visible-ASCII id is kept, prefixed by the provider", async () => {
    expect(await batchIdFor("stripe", "evt_123")).toBe("stripe:evt_123");
  });

  test("the longest id kept whole makes a 255-character batch id; one more is hashed", async () => {
    const prefix = "stripe:".length;
    expect(await batchIdFor("stripe", "x".repeat(255 - prefix))).toBe(`stripe:${"x".repeat(255 - prefix)}`);
    expect(await batchIdFor("stripe", "x".repeat(256 - prefix))).toMatch(hashed("stripe"));
  });

  test.each(["with space", "tab\t", "é", "😀"])("%j is hashed (SHA-256 of its UTF-8)", async (id) => {
    expect(await batchIdFor("github", id)).toMatch(hashed("github"));
  });

  test("an id that itself starts with sha256: is hashed, so it cannot collide with a hashed one", async () => {
    const hashedOther = (await batchIdFor("shopify", "with space")).slice("shopify:".length);
    expect(await batchIdFor("shopify", hashedOther)).not.toBe(`shopify:${hashedOther}`);
    expect(await batchIdFor("shopify", hashedOther)).toMatch(hashed("shopify"));
  });

  test("the hash is SHA-256 of the id's UTF-8, as node:crypto computes it", async () => {
    for (const id of ["with space", "ünïcode", "x".repeat(300)]) {
      expect(await batchIdFor("stripe", id)).toBe(`stripe:sha256:${createHash("sha256").update(id, "utf8").digest("hex")}`);
    }
  });

  test("always a valid batch id, deterministic, and distinct ids never share one (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PROVIDER_TYPES),
        fc.string({ unit: "binary", maxLength: 300 }),
        fc.string({ unit: "binary", maxLength: 300 }),
        async (p, a, b) => {
          const [x, y] = [await batchIdFor(p, a), await batchIdFor(p, b)];
          expect(x).toMatch(BATCH_ID);
          expect(await batchIdFor(p, a)).toBe(x);
          expect(x === y).toBe(a === b);
        },
      ),
      { numRuns: 300 },
    );
  });
});

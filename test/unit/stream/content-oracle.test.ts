/**
 * The faster content digest (src/lib/jcs.ts, src/lib/sha256.ts, src/stream/content.ts) is the
 * first version bit for bit (test/support/content-oracle.ts, kept verbatim),
 * and both are node:crypto's SHA-256 of the canonical text: partitions store
 * the digests and compare later copies with them, so one changed bit would
 * turn duplicates into conflicts after an upgrade.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { canonicalText, contentDigest, contentHash, omissionOf } from "../../../src/stream/content";
import { canonicalJson } from "../../../src/lib/jcs";
import { sha256HexSync, sha256Utf8, sha256Words } from "../../../src/lib/sha256";
import { murmur3 } from "../../../src/lib/murmur3";
import { partitionFor, PARTITION_SEED } from "../../../src/stream/partition-for";
import { oracleCanonicalJson, oracleContentDigest, oracleContentHash, oracleSha256Words, oracleWithoutFields } from "../../support/content-oracle";

const nodeSha = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");
const hexOf = (words: ArrayLike<number>) => Array.from(words, (x) => (x >>> 0).toString(16).padStart(8, "0")).join("");

/** Strings that reach every UTF-8 length: ASCII, 2- and 3-byte characters, surrogate pairs and lone surrogates. */
const text = fc.string({
  unit: fc.oneof(
    fc.constantFrom("a", '"', "\\", "\n", "\u0000", "é", "€", "\ud83d\ude00", "\ud800", "\udfff", "\u2028"),
    fc.nat({ max: 0xffff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 40,
});
/** Field names the paths below can hit. */
const name = fc.constantFrom("id", "ts", "v", "meta", "attempt", "a", "b", "", "__proto__", "é", "10", "2");
/** Rows: any JSON (doubles included), with nested objects under the names the paths use. */
const value = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    text,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.oneof(name, text), tie("value"), { maxKeys: 4 }),
  ),
})).value;
const row = fc.dictionary(fc.oneof(name, text), value, { maxKeys: 6 }) as fc.Arbitrary<Record<string, unknown>>;
const path = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("."));
const paths = fc.array(path, { maxLength: 4 });

describe("SHA-256: the reused-buffer version", () => {
  test("equals node:crypto and the first version on bytes of every length around the block boundaries", () => {
    for (let n = 0; n <= 200; n++) {
      const bytes = new Uint8Array(n).map((_, i) => (i * 131 + n) & 0xff);
      expect(sha256HexSync(bytes), `${n} bytes`).toBe(nodeSha(bytes));
      expect(hexOf(sha256Words(bytes))).toBe(hexOf(oracleSha256Words(bytes)));
    }
    // Past the kept scratch buffer (64 KiB): a buffer of its own, then the small one again.
    const big = new Uint8Array(70_000).map((_, i) => i & 0xff);
    expect(sha256HexSync(big)).toBe(nodeSha(big));
    expect(sha256HexSync(new Uint8Array([1, 2, 3]))).toBe(nodeSha(new Uint8Array([1, 2, 3])));
  });

  test("sha256Utf8 is the SHA-256 of the string's UTF-8 (TextEncoder's: a lone surrogate is U+FFFD), any string (property)", () => {
    fc.assert(
      fc.property(text, (s) => {
        expect(hexOf(sha256Utf8(s))).toBe(nodeSha(new TextEncoder().encode(s)));
      }),
      { numRuns: 2000 },
    );
    for (const s of ["", "a".repeat(55), "a".repeat(56), "é".repeat(40), `${"a".repeat(30)}\ud83d\ude00${"é".repeat(30)}`, "€".repeat(30_000)]) {
      expect(hexOf(sha256Utf8(s)), s.slice(0, 10)).toBe(nodeSha(new TextEncoder().encode(s)));
    }
  });
});

describe("canonical JSON without fields: no copy, the same text", () => {
  test("canonicalJson is the first version on any JSON value, doubles and odd strings included (property)", () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(oracleCanonicalJson(v));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(canonicalJson(v)).toBe(oracleCanonicalJson(v));
      }),
      { numRuns: 1000 },
    );
  });

  test("what the first version threw, this throws", () => {
    for (const bad of [NaN, Infinity, -Infinity, undefined, 1n, () => 1, Symbol("s"), { a: [1, { b: NaN }] }]) {
      let want: string | null = null;
      try {
        oracleCanonicalJson(bad);
      } catch (e) {
        want = (e as Error).message;
      }
      expect(want).not.toBeNull();
      expect(() => canonicalJson(bad)).toThrow(want!);
    }
    // undefined members are left out, undefined (and holes) in arrays are null, as JSON.stringify does
    const odd = { a: undefined, b: [undefined, 1, , 2], c: { d: undefined } };
    expect(canonicalJson(odd)).toBe(oracleCanonicalJson(odd));
  });

  test("leaving out dotted paths while writing is writing the row with them deleted (property)", () => {
    fc.assert(
      fc.property(row, paths, (r, ps) => {
        const before = JSON.stringify(r);
        expect(canonicalText(r, ps)).toBe(oracleCanonicalJson(oracleWithoutFields(r, ps)));
        expect(canonicalText(r, omissionOf(ps))).toBe(oracleCanonicalJson(oracleWithoutFields(r, ps)));
        expect(JSON.stringify(r)).toBe(before); // the row is not changed
      }),
      { numRuns: 3000 },
    );
  });

  test("paths that overlap: a field left out whole stays out, in any order", () => {
    const r = { a: { b: { c: 1, d: 2 }, e: 3 }, f: [{ g: 1 }], h: "x" };
    for (const ps of [["a.b", "a.b.c"], ["a.b.c", "a.b"], ["a", "a.e"], ["a.e", "a"], ["f.g"], ["h.x"], ["a.b.c", "a.b.d", "a.e"], ["nope", ""]]) {
      expect(canonicalText(r, ps), ps.join()).toBe(oracleCanonicalJson(oracleWithoutFields(r, ps)));
    }
  });
});

describe("content digests and keys", () => {
  test("equal the first version's for any row and excluded paths (property)", () => {
    fc.assert(
      fc.property(row, paths, (r, ps) => {
        expect(contentDigest(r, ps)).toBe(oracleContentDigest(r, ps));
        expect(contentDigest(r, omissionOf(ps))).toBe(oracleContentDigest(r, ps));
        expect(contentHash(r, ps)).toBe(oracleContentHash(r, ps));
        expect(contentHash(r, ps)).toBe(nodeSha(oracleCanonicalJson(oracleWithoutFields(r, ps))));
      }),
      { numRuns: 3000 },
    );
  });

  test("on the bench's rows and a webhook's, the digest is node:crypto's first 64 bits of the canonical text", () => {
    const rows: [Record<string, unknown>, string[]][] = [
      [{ id: "b-1-123", ts: 1764410100000, v: 123 }, ["ts", "v"]],
      [{ v: 1, id: "z", ts: "2026-11-29T10:00:00Z", extra: { n: 1.5, s: "€" } }, ["ts"]],
      [
        { payload: { id: "evt_1", pending_webhooks: 3, data: { object: { amount: 100 } } }, time: 1, type: "charge.succeeded" },
        ["payload.pending_webhooks", "time"],
      ],
    ];
    for (const [r, ps] of rows) {
      const hex = nodeSha(oracleCanonicalJson(oracleWithoutFields(r, ps)));
      expect(contentDigest(r, ps)).toBe(BigInt.asIntN(64, BigInt(`0x${hex.slice(0, 16)}`)).toString());
    }
  });
});

describe("partition routing", () => {
  test("partitionFor is murmur3 of the key's UTF-8, seed 42, mod P, for any key (property)", () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 1024 }), (s, p) => {
        const key = JSON.stringify([s]);
        expect(partitionFor(key, p)).toBe(murmur3(encoder.encode(key), PARTITION_SEED) % p);
        expect(partitionFor(s, p)).toBe(murmur3(encoder.encode(s), PARTITION_SEED) % p);
      }),
      { numRuns: 3000 },
    );
    for (const s of ["", "a", "ab", "abc", "abcd", "abcde", "é", "a€", "\ud83d\ude00", "\ud800", "x".repeat(2000)]) {
      expect(partitionFor(s, 8), s.slice(0, 10)).toBe(murmur3(encoder.encode(s), PARTITION_SEED) % 8);
    }
  });
});

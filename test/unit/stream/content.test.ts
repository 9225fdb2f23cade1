import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { canonicalContent, contentDigest, contentHash, withoutFields } from "../../../src/stream/content";
import { canonicalJson } from "../../../src/lib/jcs";
import { sha256HexSync } from "../../../src/lib/sha256";

/** A double from its IEEE 754 bits, as RFC 8785 Appendix B lists them. */
const fromBits = (hex: string) => new DataView(new Uint8Array(hex.match(/../g)!.map((b) => parseInt(b, 16))).buffer).getFloat64(0);

describe("RFC 8785 (JCS)", () => {
  test("§3.2.2: the sample object, numbers, strings and literals", () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    expect(canonicalJson(JSON.parse(input))).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  test("§3.2.3: members sorted by UTF-16 code units (an emoji's surrogates before U+FB33)", () => {
    const input = String.raw`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`;
    // The RFC's order: \r, 1, U+0080, ö, €, the emoji (its surrogates D83D DE00), then U+FB33.
    const sorted: [string, string][] = [
      ["\r", "Carriage Return"],
      ["1", "One"],
      ["\u0080", "Control"],
      ["\u00f6", "Latin Small Letter O With Diaeresis"],
      ["\u20ac", "Euro Sign"],
      ["\ud83d\ude00", "Emoji: Grinning Face"],
      ["\ufb33", "Hebrew Letter Dalet With Dagesh"],
    ];
    expect(canonicalJson(JSON.parse(input))).toBe(`{${sorted.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`);
  });

  test("Appendix B: the number serializations", () => {
    const cases: [string, string][] = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"], // -0
      ["0000000000000001", "5e-324"],
      ["8000000000000001", "-5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["ffefffffffffffff", "-1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["c340000000000000", "-9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af5", "9.999999999999997e+22"],
      ["44b52d02c7e14af6", "1e+23"],
      ["44b52d02c7e14af7", "1.0000000000000001e+23"],
      ["444b1ae4d6e2ef4e", "999999999999999700000"],
      ["444b1ae4d6e2ef4f", "999999999999999900000"],
      ["444b1ae4d6e2ef50", "1e+21"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["3eb0c6f7a0b5ed8e", "0.0000010000000000000002"],
      ["41b3de4355555553", "333333333.3333332"],
      ["41b3de4355555554", "333333333.33333325"],
      ["41b3de4355555555", "333333333.3333333"],
      ["41b3de4355555556", "333333333.3333334"],
      ["41b3de4355555557", "333333333.33333343"],
      ["becbf647612f3696", "-0.0000033333333333333333"],
      ["43143ff3c1cb0959", "1424953923781206.2"],
    ];
    for (const [bits, text] of cases) expect(canonicalJson(fromBits(bits)), bits).toBe(text);
    expect(() => canonicalJson(fromBits("7fffffffffffffff"))).toThrow(/NaN/); // NaN
    expect(() => canonicalJson(fromBits("7ff0000000000000"))).toThrow(/Infinity/);
    expect(canonicalJson(-0)).toBe("0");
    expect(canonicalJson(1e21)).toBe("1e+21");
  });

  test("nested objects and arrays are canonical all the way down; whitespace and member order don't matter", () => {
    const a = JSON.parse('{ "b": [ {"y": 1, "x": 2} ], "a": {"d": null, "c": "é"} }');
    const b = JSON.parse('{"a":{"c":"\\u00e9","d":null},"b":[{"x":2.0,"y":1e0}]}');
    expect(canonicalJson(a)).toBe('{"a":{"c":"é","d":null},"b":[{"x":2,"y":1}]}');
    expect(canonicalJson(b)).toBe(canonicalJson(a));
  });

  test("a parsed canonical text is itself canonical (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const once = canonicalJson(v);
        expect(canonicalJson(JSON.parse(once))).toBe(once);
      }),
    );
  });
});

describe("SHA-256", () => {
  test("equals node:crypto on any bytes, across block boundaries", () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
      const bytes = new Uint8Array(n).map((_, i) => (i * 31 + 7) & 0xff);
      expect(sha256HexSync(bytes), `${n} bytes`).toBe(createHash("sha256").update(bytes).digest("hex"));
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(sha256HexSync(bytes)).toBe(createHash("sha256").update(bytes).digest("hex"));
      }),
    );
  });
});

describe("content keys and digests", () => {
  const row = { id: "a", amount: 10, received_at: "2026-11-29T10:00:00Z", meta: { attempt: 2, region: "eu" } };

  test("a content key is the SHA-256 of the row's JCS text without the excluded fields (top-level and dotted)", () => {
    const jcs = '{"amount":10,"id":"a","meta":{"region":"eu"}}';
    expect(new TextDecoder().decode(canonicalContent(row, ["received_at", "meta.attempt"]))).toBe(jcs);
    expect(contentHash(row, ["received_at", "meta.attempt"])).toBe(createHash("sha256").update(jcs).digest("hex"));
    expect(row.meta.attempt).toBe(2); // the row itself is not changed
    expect(withoutFields(row, ["nope", "id.x", "meta.nope.deeper"])).toEqual(row);
  });

  test("the digest is the SHA-256's first 64 bits, signed, in decimal", () => {
    const hex = createHash("sha256")
      .update(canonicalJson(withoutFields(row, ["received_at"])))
      .digest("hex");
    expect(contentDigest(row, ["received_at"])).toBe(BigInt.asIntN(64, BigInt(`0x${hex.slice(0, 16)}`)).toString());
  });

  test("copies that differ only in excluded fields share a key and a digest; any other difference changes them (property)", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 })),
        fc.jsonValue({ maxDepth: 1 }),
        fc.jsonValue({ maxDepth: 1 }),
        (base, x, y) => {
          const a = { ...base, at: x };
          const b = { ...base, at: y };
          expect(contentHash(a, ["at"])).toBe(contentHash(b, ["at"]));
          expect(contentDigest(a, ["at"])).toBe(contentDigest(b, ["at"]));
          if (canonicalJson(x) !== canonicalJson(y)) expect(contentDigest(a, [])).not.toBe(contentDigest(b, []));
        },
      ),
    );
  });
});

describe("int64Decimal", () => {
  test("is BigInt's signed 64-bit decimal of hi·2^32 + lo, for any words (property) and at the edges", async () => {
    const { int64Decimal } = await import("../../../src/stream/content");
    const want = (hi: number, lo: number) => BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)).toString();
    for (const [hi, lo] of [
      [0, 0],
      [0, 1],
      [0, 0xffffffff],
      [0x7fffffff, 0xffffffff],
      [0x80000000, 0],
      [0xffffffff, 0xffffffff],
      [0xffffffff, 0],
      [1, 0],
      [0x00ffffff, 0xff000000],
    ]) {
      expect(int64Decimal(hi, lo), `${hi}:${lo}`).toBe(want(hi, lo));
    }
    fc.assert(
      fc.property(fc.nat({ max: 0xffffffff }), fc.nat({ max: 0xffffffff }), (hi, lo) => {
        expect(int64Decimal(hi, lo)).toBe(want(hi, lo));
      }),
      { numRuns: 5000 },
    );
  });
});

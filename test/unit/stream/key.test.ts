import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { encodeKey, MAX_KEY_BYTES, stateKeyOf, type KeyValue } from "../../../src/stream/key";

describe("encodeKey", () => {
  test("is the JSON array of the values", () => {
    expect(encodeKey(["evt_1"])).toBe('["evt_1"]');
    expect(encodeKey([42, "acme"])).toBe('[42,"acme"]');
    expect(encodeKey([true, false])).toBe("[true,false]");
    expect(encodeKey(['a"b', "c\\d"])).toBe('["a\\"b","c\\\\d"]');
  });

  test('keeps 42 and "42" apart', () => {
    expect(encodeKey([42])).not.toBe(encodeKey(["42"]));
    expect(encodeKey([true])).not.toBe(encodeKey(["true"]));
    expect(encodeKey([42, "acme"])).not.toBe(encodeKey(["42", "acme"]));
  });

  test("column order matters and values do not run into each other", () => {
    expect(encodeKey(["a", "b"])).not.toBe(encodeKey(["b", "a"]));
    expect(encodeKey(["a,b"])).not.toBe(encodeKey(["a", "b"]));
    expect(encodeKey(["ab", "c"])).not.toBe(encodeKey(["a", "bc"]));
  });

  test("numbers are encoded by value: 1, 1.0 and 1e0 are one key", () => {
    expect(encodeKey([1])).toBe(encodeKey([1.0]));
    expect(encodeKey([1])).toBe("[1]");
  });

  test("is stable: equal inputs give equal keys (property)", () => {
    const value: fc.Arbitrary<KeyValue> = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.double({ noNaN: true, noDefaultInfinity: true }));
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), (values) => {
        expect(encodeKey(values)).toBe(encodeKey([...values]));
        expect(encodeKey(values)).toBe(encodeKey(JSON.parse(JSON.stringify(values)) as KeyValue[]));
      }),
      { numRuns: 300 },
    );
  });

  test("is injective on strings, integers and booleans (property)", () => {
    const value: fc.Arbitrary<KeyValue> = fc.oneof(
      fc.string({ maxLength: 4 }),
      fc.integer({ min: -3, max: 3 }),
      fc.boolean(),
      fc.constantFrom("1", "true", "-1"),
    );
    const keyValues = fc.array(value, { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(keyValues, keyValues, (a, b) => {
        const same = a.length === b.length && a.every((v, i) => Object.is(v, b[i]) || (v === 0 && b[i] === 0));
        expect(encodeKey(a) === encodeKey(b)).toBe(same);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("stateKeyOf", () => {
  test("is the key itself unless the mode keys on event time", () => {
    expect(stateKeyOf('["A"]', 1704103200000, false)).toBe('["A"]');
    expect(stateKeyOf('["A"]', null, false)).toBe('["A"]');
  });

  test("appends @T in event-time-key mode", () => {
    expect(stateKeyOf('["A"]', 1704103200000, true)).toBe('["A"]@1704103200000');
    expect(stateKeyOf('["A"]', 1704103260000, true)).not.toBe(stateKeyOf('["A"]', 1704103200000, true));
  });

  test("distinct (key, T) pairs give distinct state keys (property)", () => {
    const key = fc
      .array(fc.oneof(fc.string({ maxLength: 4 }), fc.integer({ min: -5, max: 5 }), fc.constantFrom("@1", "]@2", "a@")), { minLength: 1, maxLength: 2 })
      .map(encodeKey);
    const t = fc.integer({ min: -5, max: 2_000_000_000_000 });
    fc.assert(
      fc.property(key, t, key, t, (k1, t1, k2, t2) => {
        expect(stateKeyOf(k1, t1, true) === stateKeyOf(k2, t2, true)).toBe(k1 === k2 && t1 === t2);
      }),
      { numRuns: 1000 },
    );
  });

  test("MAX_KEY_BYTES is 1 KiB", () => {
    expect(MAX_KEY_BYTES).toBe(1024);
  });
});

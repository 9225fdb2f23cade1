import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { MAX_JSON_DEPTH, valueShapeFault } from "../../../src/lib/json";
import { rowValueFault } from "../../../src/stream/row-values";
import { validateRow } from "../../../src/stream/schema";
import { validConfig } from "../stream-config";

const config = (body: Record<string, unknown> = {}) => validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", ...body });

describe("a row's values all have a JSON form (rowValueFault)", () => {
  test.each([
    [{ a: NaN }, "a: not a finite number (NaN and ±Infinity, which 1e999 reads as, have no JSON form)"],
    [{ a: { b: [1, 2, Infinity] } }, "a.b[2]: not a finite number (NaN and ±Infinity, which 1e999 reads as, have no JSON form)"],
    [{ a: [[-Infinity]] }, "a[0][0]: not a finite number (NaN and ±Infinity, which 1e999 reads as, have no JSON form)"],
    [{ n: 1n }, "n: a BigInt has no JSON form (send it as a string or a number)"],
  ])("%o is refused, naming where", (row, reason) => {
    expect(rowValueFault(row)).toBe(reason);
  });

  test("a cycle, or nesting past the limit, is refused without naming an endless path", () => {
    const row: Record<string, unknown> = { id: 1 };
    row.self = row;
    expect(rowValueFault(row)).toBe(`row nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; at most ${MAX_JSON_DEPTH} are accepted`);
    const at = (depth: number) => JSON.parse(`{"x":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`);
    expect(rowValueFault(at(MAX_JSON_DEPTH))).toBeNull();
    expect(rowValueFault(at(MAX_JSON_DEPTH + 1))).not.toBeNull();
  });

  test("every value JSON.parse can give is accepted, and every row it answers null for writes out as it is (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 6 })), (row) => {
        expect(rowValueFault(row)).toBeNull();
        const text = JSON.stringify(row);
        expect(JSON.stringify(JSON.parse(text))).toBe(text); // (-0 is written as 0, as JSON has it)
      }),
      { numRuns: 300 },
    );
  });

  test("a row holding one becomes that row's rejection with the reason, whatever the column", () => {
    const c = config({});
    expect(validateRow(c, { id: "a", ts: Date.UTC(2024, 0, 1), payload: { amount: NaN } }, 3, Date.UTC(2024, 0, 1))).toEqual({
      index: 3,
      error: "payload.amount: not a finite number (NaN and ±Infinity, which 1e999 reads as, have no JSON form)",
    });
    // A key value keeps its own reason.
    expect(validateRow(c, { id: Infinity, ts: 1 }, 0, 0)).toMatchObject({ error: "id: a key value must be a finite number" });
  });

  test("a key integer past ±(2^53 − 1) is rejected, a safe one or a string is a key", () => {
    const c = config({});
    const ts = Date.UTC(2024, 0, 1);
    expect(validateRow(c, { id: 2 ** 53, ts }, 0, ts)).toMatchObject({ error: expect.stringMatching(/^id: a key integer must be within ±\(2\^53 − 1\)/) });
    expect(validateRow(c, { id: -(2 ** 60), ts }, 0, ts)).toMatchObject({ error: expect.stringMatching(/^id: a key integer/) });
    expect(validateRow(c, { id: 2 ** 53 - 1, ts }, 0, ts)).toMatchObject({ key: "[9007199254740991]" });
    expect(validateRow(c, { id: "12345678901234567890", ts }, 0, ts)).toMatchObject({ key: '["12345678901234567890"]' });
  });
});

describe("a parsed value's shape (valueShapeFault)", () => {
  test("counts every place a shared object appears, and a cycle is endlessly deep", () => {
    let shared: unknown = 1;
    for (let i = 0; i < 40; i++) shared = [shared, shared];
    expect(valueShapeFault(shared)).toMatch(/^holds more than \d+ values/);
    expect(valueShapeFault(shared, 64, 1 << 10)).toBe("holds more than 1024 values (an object shared from several places counts at each)");
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(valueShapeFault(cycle)).toMatch(/nests arrays and objects more than 64 levels deep/);
    // A chain reached once shallowly and once deeply is as deep as its deepest place.
    let chain: unknown = 1;
    for (let i = 0; i < 40; i++) chain = { chain };
    let deeper: unknown = chain;
    for (let i = 0; i < 40; i++) deeper = { deeper };
    expect(valueShapeFault({ a: chain, b: deeper })).toMatch(/more than 64 levels deep/);
    expect(valueShapeFault({ a: chain, b: chain })).toBeNull();
  });
});

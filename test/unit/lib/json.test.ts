import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { checkDepth, describeJsonError, MAX_JSON_DEPTH, parseJson, textDepth, valueDeeperThan } from "../../../src/lib/json";

/** Issue 14: one depth-checked JSON reader for every ingress, whose errors never quote the input. */
const nested = (depth: number, inner = "1") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`;

describe("the depth limit", () => {
  test("is 64 arrays and objects, counted in text and in values alike", () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(parseJson(nested(64))).toMatchObject({ ok: true });
    expect(parseJson(nested(65))).toEqual({ ok: false, error: "nests arrays and objects more than 64 levels deep; at most 64 are accepted" });
    expect(checkDepth(JSON.parse(nested(64)))).toMatchObject({ ok: true });
    expect(checkDepth(JSON.parse(nested(65)))).toMatchObject({ ok: false });
    expect(textDepth('{"a":[{"b":{}}]}')).toBe(4);
    expect(valueDeeperThan({ a: [{ b: {} }] }, 4)).toBe(false);
    expect(valueDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
  });

  test("brackets inside strings, escaped quotes included, do not count", () => {
    expect(textDepth(JSON.stringify({ a: "[[[[{{{{", b: 'x\\"[[[', c: "\\" }))).toBe(1);
    expect(parseJson(JSON.stringify({ id: "[".repeat(1000) }))).toMatchObject({ ok: true });
  });

  test("200,000 deep is refused without recursing, as text and as a value", () => {
    expect(parseJson(nested(200_000))).toMatchObject({ ok: false });
    let v: unknown = 1;
    for (let i = 0; i < 200_000; i++) v = { v };
    expect(valueDeeperThan(v)).toBe(true);
  });

  test("shared and cyclic objects (a structured-clone message) cost their size, not their paths", () => {
    let shared: unknown = 1;
    for (let i = 0; i < 60; i++) shared = [shared, shared]; // 2^60 paths, 60 objects
    expect(valueDeeperThan(shared)).toBe(false);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(valueDeeperThan(cycle)).toBe(false);
  });

  test("the depth of text and of its parsed value agree (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
        const text = JSON.stringify(value);
        const depth = textDepth(text);
        expect(valueDeeperThan(value, depth)).toBe(false);
        if (depth > 0) expect(valueDeeperThan(value, depth - 1)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe("errors say where and what kind, never the bytes", () => {
  test.each([
    ['{"a":sk_live_abc}', "an unexpected character at column 6"],
    ["[1,\n tx]", "an unexpected character at line 2, column 3"],
    ['{"a": "sk_live_abc"', "a syntax error at column 20"],
    ['{"a":"sk_live_abc', "an unterminated string at column 18"],
    ['{"a":1}\n{"b":2}', "more text after the value at line 2, column 1"],
    ["[1,\n2,\n", "the text ends before the value is complete"],
    ['{"a":"\\q"}', "a bad escape inside a string at column 8"],
  ])("%j", (text, description) => {
    const r = parseJson(text);
    expect(r).toEqual({ ok: false, error: `is not valid JSON (${description})` });
  });

  test("an unexpected character is located exactly: the character V8 names is at that line and column (property)", () => {
    const jsonish = fc.array(fc.constantFrom(...'{}[],:"a1 \ntx-.'), { maxLength: 30 }).map((cs) => cs.join(""));
    fc.assert(
      fc.property(jsonish, (text) => {
        let token: string | undefined;
        try {
          JSON.parse(text);
        } catch (e) {
          token = /^Unexpected token '(.)'/.exec((e as Error).message)?.[1];
        }
        if (token === undefined) return;
        const r = parseJson(text);
        const where = /at (?:line (\d+), )?column (\d+)\)$/.exec(r.ok ? "" : r.error);
        expect(where, r.ok ? "" : r.error).not.toBeNull();
        const lines = text.split("\n");
        expect(lines[Number(where![1] ?? 1) - 1][Number(where![2]) - 1]).toBe(token);
      }),
      { numRuns: 1000 },
    );
  });

  test("no error ever contains a secret placed anywhere in the text (property)", () => {
    const token = fc.stringMatching(/^[A-Za-z0-9_]{4,16}$/).map((s) => `sk_live_${s}`);
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), token, fc.string({ maxLength: 40 }), fc.boolean(), (before, secret, after, quoted) => {
        const text = `${before}${quoted ? JSON.stringify(secret).slice(0, -1) : secret}${after}`;
        const r = parseJson(text);
        if (!r.ok) expect(r.error).not.toContain("sk_live");
        try {
          JSON.parse(text);
        } catch (e) {
          expect(describeJsonError(e, text)).not.toContain("sk_live");
        }
      }),
      { numRuns: 500 },
    );
  });
});

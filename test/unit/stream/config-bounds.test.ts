/** What a stream config may hold (caps), and names that must neither vanish nor alias (own properties). */
import { describe, expect, test } from "vitest";
import { configErrors, validConfig } from "../stream-config";
import {
  MAX_CONFIG_BYTES,
  MAX_FIELD_LIST,
  MAX_INTERVAL_CHARS,
  MAX_KEY_COLUMNS,
  MAX_SCHEMA_COLUMNS,
  MAX_SOURCES,
  delayOf,
  idleTimeoutOf,
  parseStreamConfig,
  sourceConfig,
  type StreamConfig,
} from "../../../src/stream/config";
import { parseInterval } from "../../../src/stream/interval";

const MINIMAL = { key: ["event_id"], eventTime: "event_ts", watermarkDelay: "30 minutes" };

const ok = validConfig;
const errors = configErrors;

const named = (n: number, value: unknown, prefix = "s") => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, value]));

describe("config caps: each message made from its constant", () => {
  test(`at most ${MAX_SOURCES} declared sources`, () => {
    expect(Object.keys(ok({ ...MINIMAL, sources: named(MAX_SOURCES, {}) }).sources)).toHaveLength(MAX_SOURCES);
    expect(errors({ ...MINIMAL, sources: named(MAX_SOURCES + 1, {}) })).toEqual([
      { path: "sources", message: `at most ${MAX_SOURCES} sources may be declared` },
    ]);
  });

  test(`at most ${MAX_SCHEMA_COLUMNS} schema columns`, () => {
    expect(Object.keys(ok({ ...MINIMAL, schema: named(MAX_SCHEMA_COLUMNS, "string", "c") }).schema)).toHaveLength(MAX_SCHEMA_COLUMNS);
    expect(errors({ ...MINIMAL, schema: named(MAX_SCHEMA_COLUMNS + 1, "string", "c") })).toEqual([
      { path: "schema", message: `at most ${MAX_SCHEMA_COLUMNS} columns may be declared` },
    ]);
  });

  test(`at most ${MAX_FIELD_LIST} volatile or excluded fields, ${MAX_KEY_COLUMNS} key columns`, () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`);
    expect(ok({ ...MINIMAL, volatile: fields(MAX_FIELD_LIST) }).volatile).toHaveLength(MAX_FIELD_LIST);
    expect(errors({ ...MINIMAL, volatile: fields(MAX_FIELD_LIST + 1) })).toEqual([{ path: "volatile", message: `at most ${MAX_FIELD_LIST} fields` }]);
    expect(ok({ ...MINIMAL, key: { content: { exclude: fields(MAX_FIELD_LIST) } } }).contentKey!.exclude).toHaveLength(MAX_FIELD_LIST);
    expect(errors({ ...MINIMAL, key: { content: { exclude: fields(MAX_FIELD_LIST + 1) } } })).toEqual([
      { path: "key.content.exclude", message: `at most ${MAX_FIELD_LIST} fields` },
    ]);
    expect(ok({ ...MINIMAL, key: fields(MAX_KEY_COLUMNS) }).key).toHaveLength(MAX_KEY_COLUMNS);
    expect(errors({ ...MINIMAL, key: fields(MAX_KEY_COLUMNS + 1) })).toEqual([{ path: "key", message: `at most ${MAX_KEY_COLUMNS} key columns` }]);
    // A key that is neither a list nor a content key says what it may be.
    expect(errors({ ...MINIMAL, key: "event_id" })).toEqual([{ path: "key", message: 'a list of key columns, or {"content": {"exclude": [fields]}}' }]);
  });

  test(`an interval is at most ${MAX_INTERVAL_CHARS} characters, and the refusal does not quote it`, () => {
    expect(ok({ ...MINIMAL, watermarkDelay: " 1 hour 30 minutes 15 seconds 500 ms " }).watermarkDelay).toBe(5_415_500);
    const long = `${" ".repeat(MAX_INTERVAL_CHARS)}1 hour`;
    expect(errors({ ...MINIMAL, watermarkDelay: long })).toEqual([{ path: "watermarkDelay", message: `at most ${MAX_INTERVAL_CHARS} characters` }]);
    expect(errors({ ...MINIMAL, sources: { a: { idleTimeout: "x".repeat(10_000) } } })).toEqual([
      { path: "sources.a.idleTimeout", message: `at most ${MAX_INTERVAL_CHARS} characters` },
    ]);
  });

  test(`a config at every list cap, with short names, fits in the ${MAX_CONFIG_BYTES}-byte body cap`, () => {
    // Every source with every setting, a full schema: the list caps can be reached within the body cap.
    const source = { watermarkDelay: "2 hours", maxEventTimeSkew: "1 day", maxAheadOfWatermark: "1 day", idleTimeout: "5 minutes", multiLine: true };
    const full = { ...MINIMAL, sources: named(MAX_SOURCES, source), schema: named(MAX_SCHEMA_COLUMNS, "timestamp:ms", "c") };
    expect(ok(full).schema).toHaveProperty("c999", "timestamp:ms");
    expect(JSON.stringify(full).length).toBeLessThan(MAX_CONFIG_BYTES);
  });
});

describe("names that must neither vanish nor alias", () => {
  test('a source called "__proto__" is refused by the source-name rule, not dropped', () => {
    const body = JSON.parse(`{"key": ["id"], "mode": "global", "sources": {"__proto__": {"watermarkDelay": "1 hour"}, "ok": {}}}`);
    expect(errors(body)).toEqual([{ path: "sources.__proto__", message: "1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit" }]);
  });

  test('"__proto__" is reported with the other problems, not instead of them', () => {
    const body = JSON.parse(`{"key": ["id"], "mode": "global", "partitions": 0, "sources": {"__proto__": {}, "bad name": {}}}`);
    expect(
      errors(body)
        .map((e) => e.path)
        .sort(),
    ).toEqual(["partitions", "sources.__proto__", "sources.bad name"]);
  });

  test('a schema column called "__proto__" is still refused', () => {
    expect(errors(JSON.parse(`{"key": ["id"], "mode": "global", "schema": {"__proto__": "int"}}`))).toEqual([
      { path: "schema.__proto__", message: '"__proto__" cannot be a column name' },
    ]);
  });

  test("sources called constructor, toString, hasOwnProperty keep their own settings; others inherit nothing", () => {
    const c = ok({
      ...MINIMAL,
      sources: { constructor: { watermarkDelay: "1 minute" }, toString: { idleTimeout: "2 minutes" }, hasOwnProperty: { disabled: true } },
    });
    expect(Object.keys(c.sources).sort()).toEqual(["constructor", "hasOwnProperty", "toString"]);
    expect(delayOf(c, "constructor")).toBe(60_000);
    expect(idleTimeoutOf(c, "toString")).toBe(120_000);
    expect(sourceConfig(c, "hasOwnProperty")).toEqual({ disabled: true });
    // Undeclared names that Object.prototype has: no settings, the stream's delay.
    const plain = ok(MINIMAL);
    for (const name of ["constructor", "toString", "valueOf", "__proto__"]) {
      expect(sourceConfig(plain, name)).toBeUndefined();
      expect(delayOf(plain, name)).toBe(30 * 60_000);
    }
  });

  test("schema columns called constructor and toString are kept as declared", () => {
    expect(ok({ key: ["constructor"], mode: "global", schema: { constructor: "int", toString: "string" } }).schema).toEqual({
      constructor: "int",
      toString: "string",
    });
  });

  test("an interval's unit is an own property: 'constructor' is no unit", () => {
    expect(() => parseInterval("1 constructor")).toThrow('unknown unit "constructor"');
    expect(errors({ ...MINIMAL, watermarkDelay: "5 toString" })).toEqual([{ path: "watermarkDelay", message: 'unknown unit "tostring"' }]);
  });
});

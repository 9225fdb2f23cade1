import { describe, expect, test } from "vitest";
import { configErrors, validConfig } from "../stream-config";
import { boundFieldChanges } from "../../../src/stream/bound-fields";
import { DEFAULT_LIMITS, delayOf, parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { contentExcludeFor, volatileFor } from "../../../src/stream/volatile-fields";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const ok = validConfig;
const errors = configErrors;

function paths(body: unknown): string[] {
  return errors(body)
    .map((e) => e.path)
    .sort();
}

const MINIMAL = { key: ["event_id"], eventTime: "event_ts", watermarkDelay: "30 minutes" };

describe("parseStreamConfig: defaults", () => {
  test("a minimal body gets every default", () => {
    expect(ok(MINIMAL)).toEqual({
      key: ["event_id"],
      eventTime: "event_ts",
      mode: "within-watermark",
      watermarkDelay: 30 * MINUTE,
      partitions: 8,
      watermarkPolicy: "min",
      schema: {},
      sources: {},
      maxEventTimeSkew: DAY,
      limits: { maxBodyBytes: 10 * 1024 * 1024, maxRows: 10_000 },
    });
  });

  test("DEFAULT_LIMITS are 10 MiB and 10000 rows", () => {
    expect(DEFAULT_LIMITS).toEqual({ maxBodyBytes: 10_485_760, maxRows: 10_000 });
  });

  test("a partial limits object keeps the other default", () => {
    expect(ok({ ...MINIMAL, limits: { maxRows: 50 } }).limits).toEqual({ maxBodyBytes: 10_485_760, maxRows: 50 });
    expect(ok({ ...MINIMAL, limits: { maxBodyBytes: 2048 } }).limits).toEqual({ maxBodyBytes: 2048, maxRows: 10_000 });
  });

  test("the full example from DESIGN §4", () => {
    const c = ok({
      key: ["event_id"],
      eventTime: "event_ts",
      mode: "within-watermark",
      watermarkDelay: "30 minutes",
      partitions: 8,
      watermarkPolicy: "min",
      schema: { event_id: "int", company_id: "string", amount: "double", event_ts: "timestamp" },
      sources: { stripe: { watermarkDelay: "2 hours" }, shopify: {} },
    });
    expect(c.sources).toEqual({ stripe: { watermarkDelay: 2 * HOUR }, shopify: {} });
    expect(c.schema).toEqual({ event_id: "int", company_id: "string", amount: "double", event_ts: "timestamp" });
    expect(c.watermarkDelay).toBe(30 * MINUTE);
  });

  test("watermarkDelay and maxEventTimeSkew accept milliseconds", () => {
    const c = ok({ ...MINIMAL, watermarkDelay: 5000, maxEventTimeSkew: 60_000 });
    expect(c.watermarkDelay).toBe(5000);
    expect(c.maxEventTimeSkew).toBe(60_000);
    expect(ok({ ...MINIMAL, watermarkDelay: 0 }).watermarkDelay).toBe(0);
    expect(ok({ ...MINIMAL, maxEventTimeSkew: "2 hours" }).maxEventTimeSkew).toBe(2 * HOUR);
  });
});

describe("parseStreamConfig: event time and delay", () => {
  test.each(["within-watermark", "event-time-key"])("mode %s requires eventTime", (mode) => {
    expect(errors({ key: ["id"], mode, watermarkDelay: "5 minutes" })).toEqual([{ path: "eventTime", message: `required in mode ${mode}` }]);
  });

  test("the default mode requires eventTime", () => {
    expect(paths({ key: ["id"], watermarkDelay: "5 minutes" })).toEqual(["eventTime"]);
  });

  test("eventTime requires watermarkDelay", () => {
    expect(errors({ key: ["id"], eventTime: "ts" })).toEqual([{ path: "watermarkDelay", message: "required when eventTime is set" }]);
    expect(paths({ key: ["id"], eventTime: "ts", mode: "global" })).toEqual(["watermarkDelay"]);
  });

  test("global mode needs neither", () => {
    const c = ok({ key: ["id"], mode: "global" });
    expect(c.mode).toBe("global");
    expect(c.eventTime).toBeNull();
    expect(c.watermarkDelay).toBe(0);
  });

  test("global mode may have an event time (for the late filter)", () => {
    const c = ok({ key: ["id"], mode: "global", eventTime: "ts", watermarkDelay: "5 minutes" });
    expect(c.eventTime).toBe("ts");
    expect(c.watermarkDelay).toBe(5 * MINUTE);
  });

  test.each([-1, -5000, 1.5, "-5 minutes", "5 fortnights", "soon", ""])("watermarkDelay %j is rejected", (delay) => {
    expect(paths({ ...MINIMAL, watermarkDelay: delay })).toEqual(["watermarkDelay"]);
  });

  test("the delay error carries the interval parser's message", () => {
    expect(errors({ ...MINIMAL, watermarkDelay: -1 })).toEqual([{ path: "watermarkDelay", message: "must be a whole, non-negative number of milliseconds" }]);
    expect(errors({ ...MINIMAL, watermarkDelay: "5 fortnights" })).toEqual([{ path: "watermarkDelay", message: 'unknown unit "fortnights"' }]);
  });

  test("a negative maxEventTimeSkew is rejected", () => {
    expect(paths({ ...MINIMAL, maxEventTimeSkew: -1 })).toEqual(["maxEventTimeSkew"]);
  });

  test("the event-time column must be a timestamp if typed", () => {
    expect(errors({ ...MINIMAL, schema: { event_ts: "string" } })).toEqual([
      { path: "schema.event_ts", message: 'the event-time column must be a timestamp ("timestamp", "timestamp:s", "timestamp:ms")' },
    ]);
    for (const type of ["timestamp", "timestamp:s", "timestamp:ms"]) {
      expect(ok({ ...MINIMAL, schema: { event_ts: type } }).schema).toEqual({ event_ts: type });
    }
  });

  test("any column may be declared with a time unit; unknown units are refused", () => {
    expect(ok({ ...MINIMAL, schema: { created: "timestamp:s", updated: "timestamp:ms" } }).schema).toEqual({ created: "timestamp:s", updated: "timestamp:ms" });
    expect(paths({ ...MINIMAL, schema: { created: "timestamp:us" } })).toEqual(["schema.created"]);
  });

  test("key columns may include the event-time column", () => {
    expect(ok({ ...MINIMAL, key: ["event_id", "event_ts"] }).key).toEqual(["event_id", "event_ts"]);
  });
});

describe("parseStreamConfig: rejects", () => {
  test("a missing key", () => {
    expect(paths({ eventTime: "ts", watermarkDelay: 1000 })).toEqual(["key"]);
  });

  test("an empty key, an empty column name, duplicate key columns, too many key columns", () => {
    expect(paths({ ...MINIMAL, key: [] })).toEqual(["key"]);
    expect(paths({ ...MINIMAL, key: [""] })).toEqual(["key.0"]);
    expect(errors({ ...MINIMAL, key: ["a", "a"] })).toEqual([{ path: "key", message: "key columns must be distinct" }]);
    expect(paths({ ...MINIMAL, key: Array.from({ length: 17 }, (_, i) => `c${i}`) })).toEqual(["key"]);
    expect(ok({ ...MINIMAL, key: Array.from({ length: 16 }, (_, i) => `c${i}`) }).key).toHaveLength(16);
  });

  test("unknown top-level fields, naming the field", () => {
    expect(errors({ ...MINIMAL, watermarkDealy: "5 minutes" })).toEqual([{ path: "(body)", message: 'Unrecognized key: "watermarkDealy"' }]);
  });

  test("unknown fields inside a source, with the source's path", () => {
    expect(errors({ ...MINIMAL, sources: { stripe: { delay: "1 hour" } } })).toEqual([{ path: "sources.stripe", message: 'Unrecognized key: "delay"' }]);
  });

  test("unknown fields inside limits, with the path", () => {
    expect(errors({ ...MINIMAL, limits: { maxBytes: 10 } })).toEqual([{ path: "limits", message: 'Unrecognized key: "maxBytes"' }]);
  });

  test.each([0, -1, 1025, 2.5, "8"])("partitions %j", (partitions) => {
    expect(paths({ ...MINIMAL, partitions })).toEqual(["partitions"]);
  });

  test.each([1, 2, 1024])("accepts partitions %d", (partitions) => {
    expect(ok({ ...MINIMAL, partitions }).partitions).toBe(partitions);
  });

  test.each(["dedup", "Within-Watermark", "", 1])("mode %j", (mode) => {
    expect(paths({ ...MINIMAL, mode })).toEqual(["mode"]);
  });

  test.each(["avg", "MIN", ""])("watermarkPolicy %j", (watermarkPolicy) => {
    expect(paths({ ...MINIMAL, watermarkPolicy })).toEqual(["watermarkPolicy"]);
  });

  test("unknown schema types", () => {
    expect(paths({ ...MINIMAL, schema: { event_id: "uuid" } })).toEqual(["schema.event_id"]);
  });

  test("bad source names", () => {
    expect(paths({ ...MINIMAL, sources: { "bad name": {} } })).toEqual(["sources.bad name"]);
    expect(paths({ ...MINIMAL, sources: { _x: {} } })).toEqual(["sources._x"]);
    expect(paths({ ...MINIMAL, sources: { ["a".repeat(65)]: {} } })).toEqual([`sources.${"a".repeat(65)}`]);
    expect(Object.keys(ok({ ...MINIMAL, sources: { ["a".repeat(64)]: {}, "s-1.b_2": {} } }).sources)).toHaveLength(2);
  });

  test("a negative source delay", () => {
    expect(paths({ ...MINIMAL, sources: { stripe: { watermarkDelay: -1 } } })).toEqual(["sources.stripe.watermarkDelay"]);
  });

  test("limits out of range", () => {
    expect(paths({ ...MINIMAL, limits: { maxBodyBytes: 1023 } })).toEqual(["limits.maxBodyBytes"]);
    // 32 MiB: the most a Durable Object RPC carries
    expect(ok({ ...MINIMAL, limits: { maxBodyBytes: 32 * 1024 * 1024 } }).limits.maxBodyBytes).toBe(33_554_432);
    expect(paths({ ...MINIMAL, limits: { maxBodyBytes: 32 * 1024 * 1024 + 1 } })).toEqual(["limits.maxBodyBytes"]);
    expect(paths({ ...MINIMAL, limits: { maxRows: 0 } })).toEqual(["limits.maxRows"]);
    expect(paths({ ...MINIMAL, limits: { maxRows: 100_001 } })).toEqual(["limits.maxRows"]);
  });

  test.each([null, [], "x", 42])("a body that is not an object: %j", (body) => {
    expect(paths(body)).toEqual(["(body)"]);
  });

  test("reports every problem at once", () => {
    expect(paths({ key: ["id"], eventTime: "ts", watermarkDelay: -5, partitions: 0, mode: "x", extra: true })).toEqual([
      "(body)",
      "mode",
      "partitions",
      "watermarkDelay",
    ]);
  });
});

describe("per-source delays", () => {
  const c = ok({ ...MINIMAL, watermarkDelay: "10 minutes", sources: { stripe: { watermarkDelay: "2 hours" }, shopify: {}, fast: { watermarkDelay: 0 } } });

  test("are parsed", () => {
    expect(c.sources).toEqual({ stripe: { watermarkDelay: 2 * HOUR }, shopify: {}, fast: { watermarkDelay: 0 } });
  });

  test("a source may be disabled", () => {
    expect(ok({ ...MINIMAL, sources: { old: { disabled: true }, new: { disabled: false } } }).sources).toEqual({
      old: { disabled: true },
      new: { disabled: false },
    });
    expect(paths({ ...MINIMAL, sources: { old: { disabled: "yes" } } })).toEqual(["sources.old.disabled"]);
  });

  test("delayOf: a source's own delay, else the stream's; 0 is a delay, not absent", () => {
    expect(delayOf(c, "stripe")).toBe(2 * HOUR);
    expect(delayOf(c, "shopify")).toBe(10 * MINUTE);
    expect(delayOf(c, "undeclared")).toBe(10 * MINUTE);
    expect(delayOf(c, "fast")).toBe(0);
  });
});

describe("stateKeys", () => {
  test("text by default, absent from the config; hashed when asked; nothing else", () => {
    expect(ok(MINIMAL)).not.toHaveProperty("stateKeys");
    expect(ok({ ...MINIMAL, stateKeys: "text" })).not.toHaveProperty("stateKeys");
    expect(ok({ ...MINIMAL, stateKeys: "hashed" }).stateKeys).toBe("hashed");
    expect(paths({ ...MINIMAL, stateKeys: "md5" })).toEqual(["stateKeys"]);
  });
});

describe("boundFieldChanges", () => {
  const base = ok({ ...MINIMAL, key: ["event_id", "company"], schema: { event_id: "int", company: "string", amount: "double" } });

  test("no change", () => {
    expect(boundFieldChanges(base, base)).toEqual([]);
    expect(boundFieldChanges(base, structuredClone(base))).toEqual([]);
  });

  test.each<[string, Partial<StreamConfig>, string[]]>([
    ["key", { key: ["event_id"] }, ["key"]],
    ["key order", { key: ["company", "event_id"] }, ["key"]],
    ["mode", { mode: "event-time-key" }, ["mode"]],
    ["eventTime", { eventTime: "other_ts" }, ["eventTime"]],
    ["partitions", { partitions: 16 }, ["partitions"]],
    ["stateKeys", { stateKeys: "hashed" }, ["stateKeys"]],
    ["a key column's type", { schema: { event_id: "long", company: "string", amount: "double" } }, ["schema.event_id"]],
    ["a key column's type removed", { schema: { event_id: "int", amount: "double" } }, ["schema.company"]],
    ["a key column's type added", { schema: { event_id: "int", company: "string", amount: "double", extra: "int" } }, []],
  ])("detects %s", (_name, change, expected) => {
    expect(boundFieldChanges(base, { ...base, ...change })).toEqual(expected);
  });

  test("an untyped key column gaining a type is a change", () => {
    const untyped = ok({ ...MINIMAL });
    const typed = ok({ ...MINIMAL, schema: { event_id: "string" } });
    expect(boundFieldChanges(untyped, typed)).toEqual(["schema.event_id"]);
  });

  describe("a time in the key: how it is read is bound, not how it is spelled", () => {
    const withKey = (key: string[], schema: Record<string, string>) => ok({ ...MINIMAL, key, schema });
    test.each<[string, string[], Record<string, string>, Record<string, string>, string[]]>([
      ["timestamp → timestamp:ms (same instants)", ["event_id", "created"], { created: "timestamp" }, { created: "timestamp:ms" }, []],
      ["timestamp:ms → timestamp", ["event_id", "created"], { created: "timestamp:ms" }, { created: "timestamp" }, []],
      ["timestamp → timestamp:s", ["event_id", "created"], { created: "timestamp" }, { created: "timestamp:s" }, ["schema.created"]],
      ["timestamp:s → timestamp:ms", ["event_id", "created"], { created: "timestamp:s" }, { created: "timestamp:ms" }, ["schema.created"]],
      ["timestamp → string", ["event_id", "created"], { created: "timestamp" }, { created: "string" }, ["schema.created"]],
      ["event time in the key: undeclared → timestamp", ["event_id", "event_ts"], {}, { event_ts: "timestamp" }, []],
      ["event time in the key: undeclared → timestamp:s", ["event_id", "event_ts"], {}, { event_ts: "timestamp:s" }, ["schema.event_ts"]],
      ["event time outside the key: → timestamp:s", ["event_id"], {}, { event_ts: "timestamp:s" }, []],
      ["event time outside the key: timestamp:s → timestamp:ms", ["event_id"], { event_ts: "timestamp:s" }, { event_ts: "timestamp:ms" }, []],
    ])("%s", (_name, key, before, after, expected) => {
      expect(boundFieldChanges(withKey(key, before), withKey(key, after))).toEqual(expected);
    });
  });

  test("reports several changes together", () => {
    expect(boundFieldChanges(base, { ...base, mode: "global", eventTime: null, partitions: 1 })).toEqual(["mode", "eventTime", "partitions"]);
  });

  test.each<[string, Partial<StreamConfig>]>([
    ["delay", { watermarkDelay: 2 * HOUR }],
    ["policy", { watermarkPolicy: "max" }],
    ["sources", { sources: { stripe: { watermarkDelay: HOUR } } }],
    ["limits", { limits: { maxBodyBytes: 2048, maxRows: 5 } }],
    ["maxEventTimeSkew", { maxEventTimeSkew: HOUR }],
    ["a non-key column's type", { schema: { event_id: "int", company: "string", amount: "string" } }],
  ])("ignores %s", (_name, change) => {
    expect(boundFieldChanges(base, { ...base, ...change })).toEqual([]);
  });
});

describe("what counts as the same event (DESIGN §11)", () => {
  test("defaults: an id key, no volatile fields, conflicts dropped, no duplicates lane; none of them written into the config", () => {
    const c = ok(MINIMAL);
    expect(c.contentKey).toBeUndefined();
    expect(c.volatile).toBeUndefined();
    expect(c.onConflict).toBeUndefined();
    expect(c.keepDuplicates).toBeUndefined();
  });

  test("a content key: key is {content: {exclude}}, the key columns empty", () => {
    const c = ok({ ...MINIMAL, key: { content: { exclude: ["received_at", "meta.attempt"] } } });
    expect(c.key).toEqual([]);
    expect(c.contentKey).toEqual({ exclude: ["received_at", "meta.attempt"] });
    expect(ok({ ...MINIMAL, key: { content: {} } }).contentKey).toEqual({ exclude: [] });
    expect(paths({ ...MINIMAL, key: { content: { exclude: ["a..b"] } } })).toEqual(["key.content.exclude.0"]);
    expect(paths({ ...MINIMAL, key: { content: { exclude: [] }, other: 1 } })).toEqual(["key"]);
    expect(errors({ ...MINIMAL, key: { content: {} }, volatile: ["x"] })).toEqual([
      { path: "volatile", message: "a content key has no conflicts: leave the fields out of the content with key.content.exclude instead" },
    ]);
  });

  test("volatile, onConflict and keepDuplicates", () => {
    const c = ok({ ...MINIMAL, volatile: ["received_at", "meta.attempt"], onConflict: "reject", keepDuplicates: true });
    expect(c).toMatchObject({ volatile: ["received_at", "meta.attempt"], onConflict: "reject", keepDuplicates: true });
    expect(paths({ ...MINIMAL, onConflict: "ignore" })).toEqual(["onConflict"]);
    expect(paths({ ...MINIMAL, volatile: ["__proto__.x"] })).toEqual(["volatile.0"]);
  });

  test('"webhook:<provider>" in volatile stands for the provider\'s fields', () => {
    expect(ok({ ...MINIMAL, volatile: ["webhook:stripe", "received_at"] }).volatile).toEqual(["payload.pending_webhooks", "received_at"]);
    // GitHub's unsigned header fields are volatile too (issue 18: a redelivery of the same signed body is no conflict).
    expect(ok({ ...MINIMAL, volatile: ["webhook:github", "time"] }).volatile).toEqual(["time", "deliveryId", "type"]);
    expect(errors({ ...MINIMAL, volatile: ["webhook:paypal"] })).toEqual([
      { path: "volatile.0", message: 'no webhook preset "paypal": one of stripe, github, shopify, standard-webhooks' },
    ]);
  });

  test("volatileFor: a provider webhook's batch adds that provider's fields to the stream's, once each; other batches take the stream's alone", () => {
    const c = ok({ ...MINIMAL, volatile: ["received_at", "time"] });
    expect(volatileFor(c, "github:ab12")).toEqual(["received_at", "time", "deliveryId", "type"]);
    expect(volatileFor(c, "b1")).toEqual(["received_at", "time"]);
    expect(volatileFor(c)).toEqual(["received_at", "time"]);
    expect(volatileFor(ok(MINIMAL), "stripe:evt_1")).toEqual(["payload.pending_webhooks"]);
    expect(volatileFor(ok(MINIMAL), "qid:stripe:evt_1")).toEqual([]);
  });

  test("contentExcludeFor: a content key leaves out the stream's fields, and a provider webhook's batch also that provider's", () => {
    const c = ok({ ...MINIMAL, key: { content: { exclude: ["received_at", "time"] } } });
    expect(contentExcludeFor(c, "github:ab12")).toEqual(["received_at", "time", "deliveryId", "type"]);
    expect(contentExcludeFor(c, "b1")).toEqual(["received_at", "time"]);
    expect(contentExcludeFor(c)).toEqual(["received_at", "time"]);
    expect(contentExcludeFor(ok({ ...MINIMAL, key: { content: {} } }), "stripe:evt_1")).toEqual(["payload.pending_webhooks"]);
    expect(contentExcludeFor(ok({ ...MINIMAL, key: { content: {} } }), "qid:stripe:evt_1")).toEqual([]);
  });

  test("the key (columns or content) and volatile are bound; onConflict and keepDuplicates are not", () => {
    const c = ok(MINIMAL);
    expect(boundFieldChanges(c, ok({ ...MINIMAL, key: { content: {} } }))).toContain("key");
    expect(boundFieldChanges(ok({ ...MINIMAL, key: { content: { exclude: ["a"] } } }), ok({ ...MINIMAL, key: { content: { exclude: ["b"] } } }))).toEqual([
      "key",
    ]);
    expect(boundFieldChanges(c, ok({ ...MINIMAL, volatile: ["x"] }))).toEqual(["volatile"]);
    expect(boundFieldChanges(c, ok({ ...MINIMAL, onConflict: "reject", keepDuplicates: true }))).toEqual([]);
  });
});

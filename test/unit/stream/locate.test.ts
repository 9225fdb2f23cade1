import { describe, expect, test } from "vitest";
import { dedupSettings, planBatch } from "../../../src/stream/batch";
import { stateKeyFor } from "../../../src/stream/dedup";
import { locateRow } from "../../../src/stream/locate";
import { validConfig } from "../stream-config";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const TS = "2026-11-29T10:00:00Z";

const withinWatermark = validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 8 });
const eventTimeKey = validConfig({ key: ["id"], eventTime: "ts", mode: "event-time-key", watermarkDelay: "10 minutes", partitions: 8 });
const global = validConfig({ key: ["id", "tenant"], eventTime: "ts", mode: "global", watermarkDelay: "10 minutes", partitions: 8 });

/** Where ingest puts a row's key, and the key it routed it by: the reader must find it there (and, during a rescale, where the old map put it). */
function ingested(config: ReturnType<typeof validConfig>, row: Record<string, unknown>, batchId?: string) {
  const plan = planBatch(config, [row], NOW, batchId === undefined ? undefined : { source: "default", watermark: 0, batchId });
  expect(plan.rejected).toEqual([]);
  const [[partition, [accepted]]] = [...plan.subBatches];
  return { stateKey: stateKeyFor(dedupSettings(config), accepted), partition, routingKey: accepted.key };
}

const error = (config: ReturnType<typeof validConfig>, text: string) => {
  const r = locateRow(config, text, NOW);
  if (!("error" in r)) throw new Error(`expected an error, got ${JSON.stringify(r)}`);
  return r.error;
};

describe("locateRow: the key alone where the mode keys by it alone", () => {
  test("within-watermark and global: no event time needed, and the key and partition are ingest's", () => {
    expect(locateRow(withinWatermark, JSON.stringify({ id: "evt-1" }), NOW)).toEqual(ingested(withinWatermark, { id: "evt-1", ts: TS, extra: 1 }));
    expect(locateRow(global, JSON.stringify({ id: 7, tenant: "acme" }), NOW)).toEqual(ingested(global, { id: 7, tenant: "acme", ts: TS }));
    // Other ids land elsewhere: the answer is the row's own key, not a constant.
    expect(locateRow(withinWatermark, JSON.stringify({ id: "evt-2" }), NOW)).toEqual(ingested(withinWatermark, { id: "evt-2", ts: TS }));
    expect(locateRow(withinWatermark, JSON.stringify({ id: "evt-2" }), NOW)).not.toEqual(locateRow(withinWatermark, JSON.stringify({ id: "evt-1" }), NOW));
  });

  test("fields outside the key are not judged: a bad event time, 1e999, a deep field elsewhere", () => {
    const found = ingested(withinWatermark, { id: "evt-1", ts: TS });
    expect(locateRow(withinWatermark, '{"id": "evt-1", "ts": "next tuesday"}', NOW)).toEqual(found);
    expect(locateRow(withinWatermark, '{"id": "evt-1", "ts": 4102444800000, "amount": 1e999}', NOW)).toEqual(found);
    expect(locateRow(withinWatermark, `{"id": "evt-1", "meta": ${"[".repeat(60)}${"]".repeat(60)}}`, NOW)).toEqual(found);
  });

  test("an event-time column read as seconds gets an instant it accepts", () => {
    const seconds = validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", schema: { ts: "timestamp:s" } });
    expect(locateRow(seconds, '{"id": "a"}', NOW)).toEqual(ingested(seconds, { id: "a", ts: 1_764_410_400 }));
  });

  test("an event time that is a key column is needed as one", () => {
    const timeKeyed = validConfig({ key: ["id", "ts"], eventTime: "ts", watermarkDelay: "10 minutes" });
    expect(error(timeKeyed, '{"id": "a"}')).toBe("row has no state key: ts: missing key column");
    expect(locateRow(timeKeyed, JSON.stringify({ id: "a", ts: TS }), NOW)).toEqual(ingested(timeKeyed, { id: "a", ts: TS }));
  });

  test("hashed keys: the same key ingest stores", () => {
    const hashed = validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", stateKeys: "hashed" });
    expect(locateRow(hashed, '{"id": "x"}', NOW)).toEqual(ingested(hashed, { id: "x", ts: TS }));
  });
});

describe("locateRow: event-time-key needs the event time", () => {
  test("and says so when it is missing", () => {
    expect(error(eventTimeKey, '{"id": "evt-1"}')).toBe(
      "row has no state key: ts: missing event time; in mode event-time-key the state key is the key columns and the event time",
    );
    expect(error(eventTimeKey, '{"id": "evt-1", "ts": null}')).toContain("ts: missing event time");
  });

  test("with it, the key is ingest's key and event time", () => {
    const r = locateRow(eventTimeKey, JSON.stringify({ id: "evt-1", ts: TS }), NOW);
    expect(r).toEqual(ingested(eventTimeKey, { id: "evt-1", ts: TS, other: true }));
    expect(r).toMatchObject({ stateKey: `["evt-1"]@${Date.parse(TS)}` });
    expect(error(eventTimeKey, '{"id": "evt-1", "ts": 1e999}')).toBe("row has no state key: ts: a key value must be a finite number");
  });
});

describe("locateRow: a row that has no state key is an error, never a throw", () => {
  test("not JSON: says where, quoting nothing", () => {
    const e = error(withinWatermark, '{"id": "sk_live_secret"');
    expect(e).toMatch(/^row is not valid JSON \(/);
    expect(e).not.toContain("sk_live");
  });

  test("too deep: parseJson's limit", () => {
    expect(error(withinWatermark, `${"[".repeat(5000)}${"]".repeat(5000)}`)).toBe(
      "row nests arrays and objects more than 64 levels deep; at most 64 are accepted",
    );
    expect(error(withinWatermark, `{"id": "a", "x": ${"[".repeat(5000)}${"]".repeat(5000)}}`)).toMatch(/^row nests arrays and objects more than 64/);
  });

  test.each(["[]", '"x"', "42", "null", '[{"id": "a"}]'])("not an object: %s", (text) => {
    expect(error(withinWatermark, text)).toMatch(/^row must be a JSON object/);
  });

  test("a key value that is not finite", () => {
    expect(error(withinWatermark, '{"id": 1e999}')).toBe("row has no state key: id: a key value must be a finite number");
    expect(error(global, '{"id": 1, "tenant": -1e999}')).toBe("row has no state key: tenant: a key value must be a finite number");
  });

  test("missing key columns", () => {
    expect(error(withinWatermark, `{"ts": "${TS}"}`)).toBe("row has no state key: id: missing key column");
    expect(error(global, '{"id": 1}')).toBe("row has no state key: tenant: missing key column");
  });
});

describe("locateRow: a content key is the whole row", () => {
  const content = validConfig({ key: { content: { exclude: ["received_at"] } }, eventTime: "ts", watermarkDelay: "10 minutes" });

  test("found as ingested; its event time is content, so it is needed", () => {
    const row = { order: "o-1", ts: TS, received_at: 5 };
    expect(locateRow(content, JSON.stringify({ order: "o-1", ts: TS }), NOW)).toEqual(ingested(content, row));
    expect(error(content, '{"order": "o-1"}')).toBe("row has no state key: ts: missing event time");
  });

  test("an event time it leaves out is not needed", () => {
    const blind = validConfig({ key: { content: { exclude: ["ts"] } }, eventTime: "ts", watermarkDelay: "10 minutes" });
    expect(locateRow(blind, '{"order": "o-1"}', NOW)).toEqual(ingested(blind, { order: "o-1", ts: TS }));
  });

  test("a number that is not finite anywhere in it is an error that names no field", () => {
    const e = error(content, `{"order": "o-1", "ts": "${TS}", "card_sk_live": {"n": [1, 1e999]}}`);
    expect(e).toBe("row has no state key: it holds a number that is not finite (such as 1e999), so its content has no key");
  });
});

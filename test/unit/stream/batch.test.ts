import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { dedupSettings, encodeOutput, mergeDecisions, planBatch } from "../../../src/stream/batch";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { partitionFor } from "../../../src/stream/partition-for";
import { progressOf, type BatchOutcome } from "../../../src/stream/batch-outcome";
import { validConfig } from "../stream-config";

const at = (h: number, m: number) => Date.UTC(2024, 0, 1, h, m);
const NOW = at(12, 0);

const config = (body: Record<string, unknown> = {}): StreamConfig =>
  validConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 4, ...body });

describe("planBatch", () => {
  const c = config();
  const rows = [
    { id: "A", ts: at(10, 0) },
    { id: "B", ts: at(10, 7) },
    { ts: at(11, 0) }, // rejected: missing key
    { id: "A", ts: at(10, 1) },
    "not a row",
    { id: "C", ts: at(9, 0) },
    { id: "D", ts: NOW + 86_400_001 }, // rejected: too far ahead, must not count toward max T
  ];
  const plan = planBatch(c, rows, NOW);

  test("lists the accepted rows' event times in input order, rejected ones left out", () => {
    expect(plan.eventTimes).toEqual([at(10, 0), at(10, 7), at(10, 1), at(9, 0)]);
  });

  test("counts the input and reports rejected rows by index", () => {
    expect(plan.input).toBe(7);
    expect(plan.rejected.map((r) => r.index)).toEqual([2, 4, 6]);
    expect(plan.rejected[0].error).toBe("id: missing key column");
    expect(plan.rejected[1].error).toBe("row is not a JSON object");
  });

  test("routes each accepted row to partitionFor(key, P), keeping input order within a partition", () => {
    const routed = [...plan.subBatches].flatMap(([p, sub]) => sub.map((r) => ({ p, index: r.index, key: r.key })));
    expect(routed.map((r) => r.index).sort((a, b) => a - b)).toEqual([0, 1, 3, 5]);
    for (const r of routed) expect(r.p).toBe(partitionFor(r.key, 4));
    for (const sub of plan.subBatches.values()) {
      const indices = sub.map((r) => r.index);
      expect(indices).toEqual(indices.slice().sort((a, b) => a - b));
      expect(sub.length).toBeGreaterThan(0);
    }
  });

  test("max event time is over the accepted rows only (the late ones included)", () => {
    expect(plan.maxEventTime).toBe(at(10, 7));
  });

  test("no accepted rows: no sub-batches and no max event time", () => {
    const empty = planBatch(c, [{ ts: at(10, 0) }, 42], NOW);
    expect(empty.subBatches.size).toBe(0);
    expect(empty.maxEventTime).toBeNull();
    expect(planBatch(c, [], NOW)).toEqual({ input: 0, rejected: [], subBatches: new Map(), maxEventTime: null, eventTimes: [] });
  });

  test("global mode without event time: max event time stays null", () => {
    const g = parseStreamConfig({ key: ["id"], mode: "global" });
    if (!g.ok) throw new Error("bad config");
    expect(planBatch(g.config, [{ id: 1 }, { id: 2 }], NOW).maxEventTime).toBeNull();
  });

  test("every row ends up exactly once: rejected or in one sub-batch (property)", () => {
    const row = fc.oneof(
      fc.record({ id: fc.constantFrom("a", "b", 1, 2, null), ts: fc.constantFrom(at(10, 0), "2024-01-01T10:00:00Z", "bad", NOW + 2 * 86_400_000) }),
      fc.constantFrom(1, "x", null, []),
    );
    fc.assert(
      fc.property(fc.array(row, { maxLength: 30 }), fc.integer({ min: 1, max: 16 }), (rows, P) => {
        const p = planBatch(config({ partitions: P }), rows, NOW);
        const seen = [...p.rejected.map((r) => r.index), ...[...p.subBatches.values()].flatMap((s) => s.map((r) => r.index))];
        expect(seen.sort((a, b) => a - b)).toEqual(rows.map((_, i) => i));
        for (const k of p.subBatches.keys()) expect(k >= 0 && k < P).toBe(true);
        const times = [...p.subBatches.values()].flatMap((s) => s.map((r) => r.eventTime!));
        expect(p.maxEventTime).toBe(times.length ? Math.max(...times) : null);
      }),
      { numRuns: 300 },
    );
  });
});

describe("dedupSettings", () => {
  test("carries mode, the stream's delay and whether there is an event time", () => {
    expect(dedupSettings(config({ mode: "event-time-key" }))).toEqual({ mode: "event-time-key", delay: 300_000, hasEventTime: true });
    const g = parseStreamConfig({ key: ["id"], mode: "global" });
    if (!g.ok) throw new Error("bad config");
    expect(dedupSettings(g.config)).toEqual({ mode: "global", delay: 0, hasEventTime: false });
  });
});

describe("mergeDecisions", () => {
  const c = config({ partitions: 1 });
  const rows = [
    { id: "A", ts: at(10, 0), n: 0 },
    { id: "B", ts: at(10, 1), n: 1 },
    { ts: at(10, 2), n: 2 },
    { id: "A", ts: at(10, 3), n: 3 },
    { id: "C", ts: at(9, 0), n: 4 },
  ];
  const plan = planBatch(c, rows, NOW);

  test("emitted rows in input order, and the counts add up", () => {
    const m = mergeDecisions(plan, new Map([[0, "eedl"]]));
    expect(m.emitted).toEqual([rows[0], rows[1]]);
    expect(m.counts).toEqual({ input: 5, emitted: 2, duplicates: 1, late: 1, conflicts: 0, rejected: plan.rejected }); // conflicts: DESIGN §11
    expect(m.counts.emitted + m.counts.duplicates + m.counts.late + m.counts.rejected.length).toBe(m.counts.input);
  });

  test("restores input order across partitions", () => {
    const p4 = planBatch(
      config({ partitions: 16 }),
      Array.from({ length: 20 }, (_, i) => ({ id: `k${i}`, ts: at(10, i) })),
      NOW,
    );
    expect(p4.subBatches.size).toBeGreaterThan(1);
    const all = new Map([...p4.subBatches].map(([p, sub]) => [p, "e".repeat(sub.length)]));
    expect(mergeDecisions(p4, all).emitted.map((r) => r.id)).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`));
  });

  test("refuses missing or short decisions", () => {
    expect(() => mergeDecisions(plan, new Map())).toThrow("partition 0 returned no decisions for 4 rows");
    expect(() => mergeDecisions(plan, new Map([[0, "ee"]]))).toThrow("partition 0 returned 2 decisions for 4 rows");
  });
});

describe("encodeOutput", () => {
  test("NDJSON, one line per row, byte-identical for the same rows", () => {
    const rows = [
      { id: "A", n: 1 },
      { id: "é", nested: { a: [1, 2] } },
    ];
    expect(encodeOutput(rows)).toBe('{"id":"A","n":1}\n{"id":"é","nested":{"a":[1,2]}}\n');
    expect(encodeOutput(structuredClone(rows))).toBe(encodeOutput(rows));
    expect(encodeOutput([])).toBe("");
  });
});

describe("progressOf", () => {
  test("the outcome's fields with rejected as a count, replayed dropped, the state figures added", () => {
    const outcome: BatchOutcome = {
      batchId: "b1",
      source: "s",
      replayed: false,
      watermark: 10,
      watermarkAfter: 20,
      input: 3,
      emitted: 1,
      duplicates: 1,
      late: 0,
      rejected: [{ index: 2, error: "id: missing key column" }],
    };
    const extra = { commitSeq: 7, committedAt: 1000, durationMs: 5, numRowsTotal: 4, numRowsUpdated: 1, numRowsRemoved: 2, stateBytes: 4096 };
    expect(progressOf(outcome, extra)).toEqual({
      batchId: "b1",
      source: "s",
      watermark: 10,
      watermarkAfter: 20,
      input: 3,
      emitted: 1,
      duplicates: 1,
      late: 0,
      rejected: 1,
      ...extra,
    });
  });
});

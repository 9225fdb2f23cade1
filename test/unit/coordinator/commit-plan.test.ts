/**
 * The commit plan (src/coordinator/commit-plan.ts), pure: what a micro-batch's
 * commit writes, given its members' ledger rows, the watermark state and the
 * requests. The Coordinator applies it in one transaction; the workers tests
 * (test/integration/coordinator/coordinator.test.ts, crash-points.test.ts) check the whole.
 */
import { describe, expect, test } from "vitest";
import fc from "fast-check";
import { planCommit, type CommitInput, type MemberRow, type PlannedRequest } from "../../../src/coordinator/commit-plan";
import { parseStreamConfig } from "../../../src/stream/config";
import { advanceWatermark } from "../../../src/stream/watermark";
import type { BatchOutcome } from "../../../src/stream/batch-outcome";

const parsed = parseStreamConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
if (!parsed.ok) throw new Error("config");
const config = parsed.config;
const MIN = 60_000;
const none = { data: null, late: null, rejected: null, conflicts: null, duplicates: null } as Record<
  "data" | "late" | "rejected" | "conflicts" | "duplicates",
  string | null
>;
type Objects = typeof none;
type Request = PlannedRequest<Objects>;

function request(source: string, batchId: string, maxEventTime: number | null, p = 0): Request {
  return {
    source,
    batchId,
    maxEventTime,
    startedAt: 900,
    counts: { input: 2, emitted: 1, duplicates: 1, late: 0, rejected: [] },
    touched: [{ p, rows: 10 + p, bytes: 100, inserted: 1, removed: 0 }],
    objects: { ...none, data: `streams/s/data/${batchId}.ndjson#0+10` },
  };
}
const fresh = (watermark: number): MemberRow => ({ body_hash: "json:h", watermark, seq: null, report: null });
const recorded = (_row: MemberRow, source: string, batchId: string): BatchOutcome => ({
  batchId,
  source,
  replayed: true,
  watermark: 0,
  watermarkAfter: 0,
  input: 0,
  emitted: 0,
  duplicates: 0,
  late: 0,
  rejected: [],
});

const input = (over: Partial<CommitInput<Objects, Request>>): CommitInput<Objects, Request> => ({
  config,
  now: 1_000,
  state: { watermark: 0, sources: {} },
  lastSeq: 4,
  reqs: [],
  rows: [],
  figures: new Map(),
  recorded,
  ...over,
});

describe("planCommit", () => {
  test("a micro-batch of two: contiguous commit numbers, one watermark over both, reports with the state after it", () => {
    const reqs = [request("a", "b1", 10 * MIN, 0), request("b", "b2", 20 * MIN, 1)];
    const plan = planCommit(
      input({
        reqs,
        rows: [fresh(0), fresh(0)],
        figures: new Map([
          [0, { rows: 1, bytes: 1 }],
          [3, { rows: 5, bytes: 50 }],
        ]),
      }),
    );
    // min over the two sources (10:00 … 20:00 minutes) minus the delay
    expect(plan.watermark).toBe(5 * MIN);
    expect(plan.sources).toEqual({ a: { maxEventTime: 10 * MIN, lastBatchAt: 1_000 }, b: { maxEventTime: 20 * MIN, lastBatchAt: 1_000 } });
    expect(plan.firstSeq).toBe(5);
    expect(plan.records.map((r) => r.report.commitSeq)).toEqual([5, 6]);
    expect(plan.outcomes.map((o) => [o.watermark, o.watermarkAfter, o.replayed])).toEqual([
      [0, 5 * MIN, false],
      [0, 5 * MIN, false],
    ]);
    // the partitions touched now replace their old figures in the totals: p0 10, p1 11, p3 5
    expect(plan.records[0].report).toMatchObject({ numRowsTotal: 26, stateBytes: 250, numRowsUpdated: 1, durationMs: 100 });
    expect(plan.partitions.map((p) => p.p)).toEqual([0, 1]);
    expect(plan.maxEventTime).toBe(20 * MIN);
    expect(plan.observations.map((o) => [o.req.batchId, o.maxBefore])).toEqual([
      ["b1", null],
      ["b2", null],
    ]);
    expect(plan.counters).toContainEqual(["batches", "", 2]);
  });

  test("a small micro-batch's members point into its outbox entry; members without bytes in a lane point nowhere", () => {
    const reqs = [request("a", "b1", null), request("a", "b2", null)];
    const ranges = {
      data: [{ offset: 0, length: 5 }, null],
      late: [null, { offset: 0, length: 3 }],
      rejected: [null, null],
      conflicts: [null, null],
      duplicates: [null, null],
    };
    const plan = planCommit(input({ reqs, rows: [fresh(0), fresh(0)], outbox: { entry: 17, ranges } }));
    expect(plan.records.map((r) => r.objects)).toEqual([
      { ...none, data: "outbox:17/data#0+5" },
      { ...none, late: "outbox:17/late#0+3" },
    ]);
  });

  test("members committed before are answered from their record and take no commit number; none fresh: nothing to write", () => {
    const committed: MemberRow = { body_hash: "json:h", watermark: 0, seq: 2, report: "r" };
    const plan = planCommit(input({ reqs: [request("a", "old", 5 * MIN)], rows: [committed] }));
    expect(plan).toMatchObject({ fresh: false, records: [], counters: [], done: [], partitions: [], watermark: 0 });
    expect(plan.outcomes[0]).toMatchObject({ batchId: "old", replayed: true });
  });

  test("the watermark and sources are advanceWatermark's over the fresh members in order (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ source: fc.constantFrom("a", "b", "c"), t: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }), old: fc.boolean() }), {
          maxLength: 8,
        }),
        (members) => {
          const reqs = members.map((m, i) => request(m.source, `b${i}`, m.t === null ? null : m.t * MIN));
          const rows = members.map((m): MemberRow => (m.old ? { body_hash: "h", watermark: 0, seq: 1, report: "r" } : fresh(0)));
          const plan = planCommit(input({ reqs, rows, lastSeq: 0 }));
          let state = { watermark: 0, sources: {} };
          for (const [i, r] of reqs.entries()) if (!members[i].old) state = advanceWatermark(config, state, r.source, r.maxEventTime, 1_000);
          expect({ watermark: plan.watermark, sources: plan.sources }).toEqual(state);
          expect(plan.records.map((r) => r.report.commitSeq)).toEqual(plan.records.map((_, i) => i + 1));
          expect(plan.outcomes.filter((o) => !o.replayed).length).toBe(members.filter((m) => !m.old).length);
        },
      ),
    );
  });
});

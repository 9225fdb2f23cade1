import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { DEFAULT_THRESHOLDS, evaluateHealth, heldBackBy, type HealthInput, type HealthSource } from "../../../src/stream/health";
import type { ProgressReport } from "../../../src/stream/batch-outcome";

const MIN = 60_000;
const NOW = Date.UTC(2024, 0, 1, 13, 0);

/** A progress report committed `ago` ms before NOW. */
function report(seq: number, p: Partial<ProgressReport> & { ago?: number } = {}): ProgressReport {
  const { ago = 0, ...rest } = p;
  return {
    batchId: `b${seq}`,
    source: "s",
    watermark: 0,
    watermarkAfter: 0,
    input: 10,
    emitted: 10,
    duplicates: 0,
    late: 0,
    rejected: 0,
    commitSeq: seq,
    committedAt: NOW - ago,
    durationMs: 5,
    numRowsTotal: 0,
    numRowsUpdated: 0,
    numRowsRemoved: 0,
    stateBytes: 0,
    ...rest,
  };
}

const src = (watermark: number, more: Partial<HealthSource> = {}): HealthSource => ({ watermark, lastBatchAt: NOW, counted: true, idle: false, ...more });

function input(more: Partial<HealthInput> = {}): HealthInput {
  return {
    now: NOW,
    mode: "within-watermark",
    policy: "min",
    delay: 5 * MIN,
    hasEventTime: true,
    watermark: 10 * MIN,
    sources: { s: src(10 * MIN) },
    progress: [],
    ...more,
  };
}

/** n commits, each moving the watermark by `step` and state by `grow`. */
function series(n: number, step: number, grow: number, more: Partial<ProgressReport> = {}): ProgressReport[] {
  return Array.from({ length: n }, (_, i) =>
    report(i + 1, { watermark: i * step, watermarkAfter: (i + 1) * step, numRowsTotal: 100 + (i + 1) * grow, ago: (n - i) * 1000, ...more }),
  );
}

describe("evaluateHealth", () => {
  test("a quiet new stream is ok", () => {
    const h = evaluateHealth(input());
    expect(h).toMatchObject({ status: "ok", reasons: [], heldBackBy: null, watermarkLagMs: 0, idleSources: [] });
    expect(h.window).toMatchObject({ batches: 0, rows: 0, lateRate: null, rejectedRate: null });
  });

  test("a steadily advancing stream is ok", () => {
    expect(evaluateHealth(input({ progress: series(20, MIN, 0) })).status).toBe("ok");
  });

  test("watermark stalled while rows arrive: critical", () => {
    const h = evaluateHealth(input({ progress: series(6, 0, 1) }));
    expect(h.status).toBe("critical");
    expect(h.reasons.map((r) => r.code)).toEqual(["watermark-stalled"]);
    expect(h.window.watermarkAdvanceMs).toBe(0);
  });

  test("not stalled: too few commits, only rejected rows, reports outside the window, or no event time", () => {
    expect(evaluateHealth(input({ progress: series(4, 0, 0) })).reasons).toEqual([]);
    const rejectedOnly = series(6, 0, 0, { input: 10, emitted: 0, rejected: 10 });
    expect(evaluateHealth(input({ progress: rejectedOnly })).reasons.map((r) => r.code)).toEqual(["rejected-rate"]);
    const old = series(6, 0, 0).map((r) => ({ ...r, committedAt: NOW - DEFAULT_THRESHOLDS.windowMs - 1 }));
    expect(evaluateHealth(input({ progress: old })).reasons).toEqual([]);
    expect(evaluateHealth(input({ progress: series(6, 0, 0), hasEventTime: false, mode: "global" })).reasons).toEqual([]);
  });

  test("held back by: the source at the min, lagging the max by more than the delay", () => {
    const sources = { fast: src(60 * MIN), slow: src(50 * MIN), mid: src(58 * MIN) };
    const h = evaluateHealth(input({ sources, watermark: 50 * MIN }));
    expect(h.heldBackBy).toBe("slow");
    expect(h.status).toBe("warn");
    expect(h.reasons).toEqual([expect.objectContaining({ code: "held-back", severity: "warn" })]);
    expect(h.reasons[0].detail).toContain('"slow"');
    expect(h.watermarkLagMs).toBe(10 * MIN);
  });

  test("not held back: within the delay, under policy max, idle or uncounted sources, a single source", () => {
    expect(heldBackBy({ ...input(), sources: { a: src(60 * MIN), b: src(55 * MIN) } })).toBeNull();
    expect(heldBackBy({ ...input(), policy: "max", sources: { a: src(60 * MIN), b: src(0) } })).toBeNull();
    expect(heldBackBy({ ...input(), sources: { a: src(60 * MIN), b: src(0, { idle: true, counted: false }) } })).toBeNull();
    expect(heldBackBy({ ...input(), sources: { a: src(60 * MIN) } })).toBeNull();
  });

  test("not held back: a source whose watermark is lower only because it was given a longer delay on purpose (#15)", () => {
    // "batch" runs 2 hours behind by design (its own delay); its event time is as far as the others'.
    const sources = { live: src(300 * MIN), batch: src(300 * MIN + 5 * MIN - 120 * MIN, { delay: 120 * MIN }) };
    expect(heldBackBy({ ...input(), sources })).toBeNull();
    expect(evaluateHealth(input({ sources, watermark: sources.batch.watermark })).reasons).toEqual([]);
    // …but one that also lags in event time is.
    const behind = { ...sources, batch: src(300 * MIN + 5 * MIN - 120 * MIN - 30 * MIN, { delay: 120 * MIN }) };
    expect(heldBackBy({ ...input(), sources: behind })).toBe("batch");
  });

  test("a declared source that never sent is named, and said to be silent", () => {
    const h = evaluateHealth(input({ sources: { a: src(60 * MIN), quiet: src(0, { lastBatchAt: null }) }, watermark: 0 }));
    expect(h.heldBackBy).toBe("quiet");
    expect(h.reasons[0].detail).toContain("never sent");
  });

  test("state rising without plateau while the watermark sweeps past the retention: warn", () => {
    const h = evaluateHealth(input({ progress: series(12, 2 * MIN, 50) }));
    expect(h.reasons.map((r) => r.code)).toEqual(["state-rising"]);
    expect(h.status).toBe("warn");
    expect(h.window).toMatchObject({ stateRowsFirst: 150, stateRowsLast: 700 });
  });

  test("state with a plateau, with removals, within the retention, or in global mode is not rising", () => {
    const plateau = series(12, 2 * MIN, 50).map((r, i) => (i === 6 ? { ...r, numRowsTotal: 10 } : r));
    expect(evaluateHealth(input({ progress: plateau })).reasons).toEqual([]);
    expect(evaluateHealth(input({ progress: series(12, 2 * MIN, 50, { numRowsRemoved: 1 }) })).reasons).toEqual([]);
    expect(evaluateHealth(input({ progress: series(5, MIN, 50) })).reasons).toEqual([]);
    expect(evaluateHealth(input({ progress: series(12, 2 * MIN, 50), mode: "global" })).reasons).toEqual([]);
  });

  test("late rate: warn at 5%, critical at 50%", () => {
    const warn = evaluateHealth(input({ progress: series(10, MIN, 0, { input: 10, emitted: 9, late: 1 }) }));
    expect(warn.reasons).toEqual([expect.objectContaining({ code: "late-rate", severity: "warn" })]);
    expect(warn.window.lateRate).toBeCloseTo(0.1);
    const critical = evaluateHealth(input({ progress: series(10, MIN, 0, { input: 10, emitted: 4, late: 6 }) }));
    expect(critical.status).toBe("critical");
  });

  test("rejected rate: warn at 1%; too few rows are not judged", () => {
    const h = evaluateHealth(input({ progress: series(10, MIN, 0, { input: 10, emitted: 9, rejected: 1 }) }));
    expect(h.reasons).toEqual([expect.objectContaining({ code: "rejected-rate", severity: "warn" })]);
    expect(evaluateHealth(input({ progress: [report(1, { input: 2, emitted: 0, rejected: 2 })] })).reasons).toEqual([]);
  });

  test("thresholds can be given", () => {
    const h = evaluateHealth(input({ progress: series(10, MIN, 0, { input: 10, emitted: 9, late: 1 }) }), { lateWarn: 0.2 });
    expect(h.status).toBe("ok");
  });
});

describe("properties", () => {
  const progress = fc
    .array(
      fc.record({
        advance: fc.integer({ min: 0, max: 3 * MIN }),
        input: fc.integer({ min: 0, max: 50 }),
        late: fc.nat(50),
        rejected: fc.nat(50),
        grow: fc.integer({ min: -20, max: 20 }),
        removed: fc.nat(3),
        ago: fc.integer({ min: 0, max: 30 * MIN }),
      }),
      { maxLength: 30 },
    )
    .map((steps) => {
      let wm = 0;
      let state = 0;
      return steps
        .sort((a, b) => b.ago - a.ago)
        .map((s, i) => {
          const late = Math.min(s.late, s.input);
          const rejected = Math.min(s.rejected, s.input - late);
          state = Math.max(0, state + s.grow);
          const r = report(i + 1, {
            watermark: wm,
            watermarkAfter: (wm += s.advance),
            input: s.input,
            late,
            rejected,
            emitted: s.input - late - rejected,
            numRowsTotal: state,
            numRowsRemoved: s.removed,
            ago: s.ago,
          });
          return r;
        });
    });
  const sources = fc.dictionary(
    fc.constantFrom("a", "b", "c", "d"),
    fc.record({ watermark: fc.integer({ min: 0, max: 100 * MIN }), lastBatchAt: fc.constant(NOW), counted: fc.boolean(), idle: fc.boolean() }),
  );
  const inputs = fc.record({
    policy: fc.constantFrom("min" as const, "max" as const),
    mode: fc.constantFrom("within-watermark" as const, "event-time-key" as const, "global" as const),
    delay: fc.integer({ min: 0, max: 10 * MIN }),
    sources,
    progress,
  });

  test("status is the worst reason's severity; ok exactly when there is no reason", () => {
    fc.assert(
      fc.property(inputs, (i) => {
        const h = evaluateHealth(input(i));
        const worst = h.reasons.some((r) => r.severity === "critical") ? "critical" : h.reasons.length ? "warn" : "ok";
        expect(h.status).toBe(worst);
        expect(new Set(h.reasons.map((r) => r.code)).size).toBe(h.reasons.length);
      }),
    );
  });

  test("held back by is a counted source at the min, only under min, and then it has a reason", () => {
    fc.assert(
      fc.property(inputs, (i) => {
        const h = evaluateHealth(input(i));
        if (h.heldBackBy === null) {
          expect(h.reasons.some((r) => r.code === "held-back")).toBe(false);
          return;
        }
        expect(i.policy).toBe("min");
        const counted = Object.values(i.sources).filter((s) => s.counted);
        expect(i.sources[h.heldBackBy].counted).toBe(true);
        expect(i.sources[h.heldBackBy].watermark).toBe(Math.min(...counted.map((s) => s.watermark)));
        expect(Math.max(...counted.map((s) => s.watermark)) - i.sources[h.heldBackBy].watermark).toBeGreaterThan(i.delay);
        expect(h.reasons.some((r) => r.code === "held-back")).toBe(true);
      }),
    );
  });

  test("rates are fractions of the window's rows; the window holds only recent reports", () => {
    fc.assert(
      fc.property(inputs, (i) => {
        const h = evaluateHealth(input(i));
        const recent = i.progress.filter((p) => p.committedAt >= NOW - DEFAULT_THRESHOLDS.windowMs);
        expect(h.window.batches).toBe(recent.length);
        expect(h.window.rows).toBe(recent.reduce((a, p) => a + p.input, 0));
        for (const r of [h.window.lateRate, h.window.rejectedRate]) if (r !== null) expect(r >= 0 && r <= 1).toBe(true);
      }),
    );
  });

  test("stalled is said only when the window's watermark did not move", () => {
    fc.assert(
      fc.property(inputs, (i) => {
        const h = evaluateHealth(input(i));
        if (h.reasons.some((r) => r.code === "watermark-stalled")) expect(h.window.watermarkAdvanceMs).toBe(0);
      }),
    );
  });
});

describe("a window that starts with the stream's first commit", () => {
  test("measures the watermark's advance from the first watermark there was, not from 0", () => {
    // The first report was judged by no watermark (0) and set it to 10:00; state grows, the watermark moves 4 minutes.
    const progress = series(12, 0, 50).map((r, i) => ({ ...r, watermark: i === 0 ? 0 : at(i - 1), watermarkAfter: at(i) }));
    const h = evaluateHealth(input({ progress }));
    expect(h.reasons.map((r) => r.code)).toEqual([]);
    // Nor when the first commits left it at 0 (a declared source had not sent yet).
    const pinned = [report(1, { numRowsTotal: 1 }), report(2, { numRowsTotal: 2 }), ...progress.slice(2)];
    expect(evaluateHealth(input({ progress: pinned })).reasons.map((r) => r.code)).toEqual([]);
  });
});

/** 10:00 + i × 20 s, epoch ms */
function at(i: number): number {
  return Date.UTC(2024, 0, 1, 10, 0) + i * 20_000;
}

describe("a stream's table", () => {
  test("an append that keeps failing is a warning with the error; a healthy table adds nothing", () => {
    const table = { failing: true, failures: 3, lastError: "table s: x.avro is referenced by the table but missing", publishedSeq: 4, committedSeq: 9 };
    const h = evaluateHealth(input({ table }));
    expect(h.status).toBe("warn");
    expect(h.reasons).toEqual([
      {
        code: "table-failing",
        severity: "warn",
        detail:
          "appending to the table failed 3 time(s) in a row (5 commit(s) not in it yet, retried with backoff): table s: x.avro is referenced by the table but missing",
      },
    ]);
    expect(evaluateHealth(input({ table: { ...table, failing: false, failures: 0, lastError: null } }))).toMatchObject({ status: "ok", reasons: [] });
  });
});

describe("conflicts (DESIGN §11)", () => {
  test("a conflict rate at or above 1% of recent rows is a warning that points at the conflicts lane", () => {
    const h = evaluateHealth(input({ progress: series(6, MIN, 0, { input: 50, emitted: 49, duplicates: 1, conflicts: 1 }) }));
    expect(h.reasons).toEqual([expect.objectContaining({ code: "conflict-rate", severity: "warn" })]);
    expect(h.reasons[0].detail).toContain("/conflicts");
    expect(h.window).toMatchObject({ conflicts: 6, conflictRate: 6 / 300 });
    expect(evaluateHealth(input({ progress: series(6, MIN, 0, { input: 200, emitted: 199, duplicates: 1, conflicts: 1 }) })).reasons).toEqual([]);
  });
});

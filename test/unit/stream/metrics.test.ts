import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { bucketOf, commitLine, DURATION_BUCKETS, metricDeltas, renderPrometheus, streamMetricsOf, type CommittedFigures } from "../../../src/stream/metrics";

const batch = (source: string, more: Partial<CommittedFigures> = {}): CommittedFigures => ({
  source,
  emitted: 0,
  duplicates: 0,
  late: 0,
  rejected: 0,
  durationMs: 0,
  ...more,
});

describe("counters", () => {
  test("a micro-batch's deltas are summed per counter; zeros are left out", () => {
    const d = metricDeltas([
      batch("a", { emitted: 2, duplicates: 1, durationMs: 30 }),
      batch("a", { emitted: 1, durationMs: 3 }),
      batch("b", { late: 4, rejected: 1, durationMs: 20_000 }),
    ]);
    expect(new Map(d.map(([n, s, v]) => [`${n}/${s}`, v]))).toEqual(
      new Map([
        ["rows:emitted/a", 3],
        ["rows:duplicate/a", 1],
        ["batches/", 3],
        [`duration:${bucketOf(0.03)}/`, 1],
        ["duration:sum/", 20.033],
        [`duration:${bucketOf(0.003)}/`, 1],
        ["rows:late/b", 4],
        ["rows:rejected/b", 1],
        [`duration:${DURATION_BUCKETS.length}/`, 1],
      ]),
    );
  });

  test("bucketOf: the first bound at or above the duration; past the last, +Inf", () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(0.005)).toBe(0);
    expect(bucketOf(0.0051)).toBe(1);
    expect(bucketOf(10)).toBe(DURATION_BUCKETS.length - 1);
    expect(bucketOf(10.1)).toBe(DURATION_BUCKETS.length);
  });

  test("stored deltas read back as the sums, whatever the batches", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            source: fc.constantFrom("a", "b"),
            emitted: fc.nat(9),
            duplicates: fc.nat(9),
            late: fc.nat(9),
            rejected: fc.nat(9),
            durationMs: fc.nat(20_000),
          }),
          { maxLength: 20 },
        ),
        (batches) => {
          const m = streamMetricsOf(
            "s",
            metricDeltas(batches).map(([name, source, n]) => ({ name, source, n })),
            { watermark: 0, sources: {}, state: { rows: 0, bytes: 0 } },
          );
          expect(m.batches).toBe(batches.length);
          expect(m.durationBuckets.reduce((a, b) => a + b, 0)).toBe(batches.length);
          const emitted = m.rows.filter((r) => r.outcome === "emitted").reduce((a, r) => a + r.n, 0);
          expect(emitted).toBe(batches.reduce((a, b) => a + b.emitted, 0));
        },
      ),
    );
  });
});

describe("renderPrometheus", () => {
  const m = streamMetricsOf(
    'we"ird\\name',
    [
      { name: "rows:emitted", source: "web", n: 5 },
      { name: "batches", source: "", n: 2 },
      { name: "duration:0", source: "", n: 1 },
      { name: "duration:3", source: "", n: 1 },
      { name: "duration:sum", source: "", n: 0.05 },
    ],
    { watermark: 123, sources: { web: 123 }, state: { rows: 7, bytes: 700 } },
  );
  const text = renderPrometheus([m]);

  test("has HELP and TYPE for every family, and escapes label values", () => {
    for (const f of [
      "edge_dedup_rows_total counter",
      "edge_dedup_watermark_ms gauge",
      "edge_dedup_state_rows gauge",
      "edge_dedup_state_bytes gauge",
      "edge_dedup_batches_total counter",
      "edge_dedup_batch_duration_seconds histogram",
    ]) {
      expect(text).toContain(`# TYPE ${f}\n`);
    }
    expect(text).toContain('edge_dedup_rows_total{stream="we\\"ird\\\\name",source="web",outcome="emitted"} 5\n');
    expect(text).toContain('edge_dedup_watermark_ms{stream="we\\"ird\\\\name"} 123\n');
    expect(text.endsWith("\n")).toBe(true);
  });

  test("histogram buckets are cumulative and end in +Inf = count", () => {
    const buckets = text
      .split("\n")
      .filter((l) => l.startsWith("edge_dedup_batch_duration_seconds_bucket"))
      .map((l) => Number(l.split(" ").pop()));
    expect(buckets).toHaveLength(DURATION_BUCKETS.length + 1);
    expect(buckets[0]).toBe(1);
    expect(buckets.at(-1)).toBe(2);
    buckets.forEach((b, i) => i > 0 && expect(b).toBeGreaterThanOrEqual(buckets[i - 1]));
    expect(text).toMatch(/edge_dedup_batch_duration_seconds_count\{stream="[^\n]*"\} 2\n/);
  });
});

test("the commit log line sums a micro-batch's batches", () => {
  expect(commitLine("s", [batch("a", { emitted: 2, durationMs: 5 }), batch("b", { late: 1, rejected: 3, durationMs: 9 })], 10, 20)).toEqual({
    stream: "s",
    batches: 2,
    emitted: 2,
    duplicates: 0,
    late: 1,
    rejected: 3,
    watermark: 10,
    watermarkAfter: 20,
    durationMs: 9,
  });
});

describe("conflicts (DESIGN §11)", () => {
  test("are a counter of their own, by source: they are also duplicate or rejected rows, so rows_total still sums to the input", () => {
    const d = metricDeltas([batch("a", { duplicates: 2, conflicts: 1 }), batch("a", { rejected: 1, conflicts: 1 }), batch("b", { emitted: 1 })]);
    const m = streamMetricsOf(
      "s",
      d.map(([name, source, n]) => ({ name, source, n })),
      { watermark: 0, sources: {}, state: { rows: 0, bytes: 0 } },
    );
    expect(m.conflicts).toEqual([{ source: "a", n: 2 }]);
    const text = renderPrometheus([m]);
    expect(text).toContain('edge_dedup_conflicts_total{stream="s",source="a"} 2\n');
    expect(text).toContain("# TYPE edge_dedup_conflicts_total counter\n");
    expect(text).not.toContain('outcome="conflict"');
  });
});

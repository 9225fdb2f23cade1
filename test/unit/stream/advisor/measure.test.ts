import { describe, expect, test } from "vitest";
import { eventOf, eventsOf, HistoryNotes, type HistoryEvent } from "../../../../src/stream/advisor/history.ts";
import { bar, histogramBins, renderHistogram, shortDuration } from "../../../../src/stream/advisor/histogram.ts";
import { disorderFigures, gapFigures, measure } from "../../../../src/stream/advisor/measure.ts";
import { QuantileSketch } from "../../../../src/stream/advisor/sketch.ts";

const BASE = Date.parse("2026-11-29T00:00:00Z");
/** [key, seconds after BASE, source?] → events */
export const history = (rows: [string, number, string?][]): HistoryEvent[] =>
  rows.map(([key, s, source]) => ({ key: JSON.stringify([key]), time: BASE + s * 1000, source: source ?? "default" }));
/** within the sketch's 1% (figures are rounded up to whole ms) */
const near = (value: number | null, exact: number) => {
  expect(value).not.toBeNull();
  expect(Math.abs(value! - exact)).toBeLessThanOrEqual(0.01 * exact + 1);
};

describe("measure: duplicates and gaps", () => {
  // a@100 b@105 a@100 c@90 a@130 b@104 (seconds)
  const m = measure(
    history([
      ["a", 100],
      ["b", 105],
      ["a", 100],
      ["c", 90],
      ["a", 130],
      ["b", 104],
    ]),
  );

  test("events, distinct keys, duplicates", () => {
    expect([m.events, m.distinctKeys, m.duplicates]).toEqual([6, 3, 3]);
    expect([m.firstTime, m.lastTime]).toEqual([BASE + 90_000, BASE + 130_000]);
  });

  test("a gap is |T_copy − T_first| for every later copy, against the first copy", () => {
    // a: 0 (same time), 30 s (130 − 100, not 130 − 100 again from the second copy); b: |104 − 105| = 1 s
    const g = gapFigures(m.gaps);
    expect(g.count).toBe(3);
    expect(m.gaps.zeroCount).toBe(1);
    near(g.p50, 1_000);
    expect(g.max).toBe(30_000);
    expect(g["p99.9"]).toBe(30_000); // nearest rank: ⌈0.999 × 3⌉ = 3, the largest
  });

  test("disorder: how far behind the source's max event time so far, 0 in order", () => {
    // a@100 0, b@105 0, a@100 5 s, c@90 15 s, a@130 0, b@104 26 s (max is 130 by then)
    const d = disorderFigures(m.disorder);
    expect([d.events, d.outOfOrder, d.outOfOrderShare]).toEqual([6, 3, 0.5]);
    expect(d.max).toBe(26_000);
    expect(d.p99).toBe(26_000); // nearest rank of 6 values: the largest
    expect(d.p50).toBe(0);
    expect(m.disorder.zeroCount).toBe(3);
  });
});

describe("measure: disorder is per source", () => {
  test("two sources each in order, interleaved: nothing is out of order", () => {
    const m = measure(
      history([
        ["a", 100, "s1"],
        ["b", 10, "s2"],
        ["c", 200, "s1"],
        ["d", 20, "s2"],
        ["e", 300, "s1"],
        ["f", 30, "s2"],
      ]),
    );
    expect(disorderFigures(m.disorder).outOfOrder).toBe(0);
    expect([...m.disorderBySource.keys()]).toEqual(["s1", "s2"]);
  });

  test("one source's disorder does not leak into another's", () => {
    const m = measure(
      history([
        ["a", 100, "s1"],
        ["b", 40, "s1"],
        ["c", 10, "s2"],
        ["d", 20, "s2"],
      ]),
    );
    expect(disorderFigures(m.disorderBySource.get("s1")!)).toMatchObject({ events: 2, outOfOrder: 1, max: 60_000 });
    expect(disorderFigures(m.disorderBySource.get("s2")!)).toMatchObject({ events: 2, outOfOrder: 0, max: 0 });
  });

  test("quantiles of many in-order events with a few stragglers", () => {
    const rows: [string, number][] = [];
    for (let i = 0; i < 10_000; i++) rows.push([`k${i}`, i]);
    for (let i = 0; i < 5; i++) rows.push([`late${i}`, 10_000 - 600]); // 10 minutes behind
    const d = disorderFigures(measure(history(rows)).disorder);
    expect(d.outOfOrder).toBe(5);
    expect(d.p99).toBe(0);
    near(d["p99.9"], 0); // 5 of 10,005 is 0.05%: below the p99.9
    expect(d.max).toBe(599_000); // the newest is 9,999 s
  });

  test("an empty history", () => {
    const m = measure([]);
    expect([m.events, m.firstTime, m.lastTime]).toEqual([0, null, null]);
    expect(gapFigures(m.gaps)).toEqual({ count: 0, p50: null, p90: null, p99: null, "p99.9": null, max: null });
    expect(disorderFigures(m.disorder).outOfOrderShare).toBe(0);
  });
});

describe("history rows → events", () => {
  const cols = { key: ["id", "tenant"], time: "ts", source: "src" };
  test("keys encode as the service does; times parse ISO or epoch in the unit", () => {
    expect(eventOf({ id: "e1", tenant: 7, ts: "2026-11-29T00:00:00Z", src: "web" }, cols)).toEqual({ key: '["e1",7]', time: BASE, source: "web" });
    expect(eventOf({ id: "e1", tenant: 7, ts: BASE / 1000 }, { ...cols, unit: "s" })).toMatchObject({ time: BASE, source: "default" });
    expect(eventOf({ id: "e1", ts: "2026-11-29T00:00:00.000Z" }, { key: ["id", "ts"], time: "ts" })).toMatchObject({ key: `["e1",${BASE}]` });
  });

  test("rows without a key or a time are skipped with a reason", () => {
    const notes = new HistoryNotes();
    const rows = [
      { id: "x", tenant: 1, ts: BASE },
      { tenant: 1, ts: BASE },
      { id: "y", tenant: 1 },
      { id: "z", tenant: 1, ts: "yesterday" },
      [1],
      { id: {}, tenant: 1, ts: BASE },
    ];
    expect([...eventsOf(rows, cols, notes)].map((e) => e.key)).toEqual(['["x",1]']);
    expect(notes.skipped).toBe(5);
    expect(notes.examples[0]).toBe("row 2: id: missing key column");
  });

  test("numbers that look like epoch seconds read as ms are noted", () => {
    const notes = new HistoryNotes();
    [
      ...eventsOf(
        [
          { id: 1, ts: 1_764_374_400 },
          { id: 2, ts: BASE },
        ],
        { key: ["id"], time: "ts" },
        notes,
      ),
    ];
    expect(notes.implausibleMs).toBe(1);
  });
});

describe("histogram", () => {
  test("bars in eighths; a non-zero count shows", () => {
    expect(bar(10, 10, 4)).toBe("████");
    expect(bar(5, 10, 3)).toBe("█▌");
    expect(bar(1, 1_000_000, 10)).toBe("▏");
    expect(bar(0, 10, 10)).toBe("");
  });

  test("log bins from the first to the last non-empty, zeros apart", () => {
    const s = new QuantileSketch();
    s.add(0, 4);
    s.add(2_000, 3); // ≤ 3 s
    s.add(500_000); // ≤ 10 min
    const bins = histogramBins(s);
    expect(bins.map((b) => [b.label, b.count])).toEqual([
      ["0", 4],
      ["≤ 3 s", 3],
      ["≤ 10 s", 0],
      ["≤ 30 s", 0],
      ["≤ 1 min", 0],
      ["≤ 3 min", 0],
      ["≤ 10 min", 1],
    ]);
    const lines = renderHistogram(s, 8);
    expect(lines[0]).toBe("         0 │████████ 4   50.0%");
    expect(renderHistogram(new QuantileSketch())).toEqual(["  (none)"]);
  });

  test("short durations", () => {
    expect([0, 850, 12_500, 252_000, 5_400_000, 2 * 86_400_000, null].map(shortDuration)).toEqual(["0", "850 ms", "12.5 s", "4.2 min", "1.5 h", "2 d", "–"]);
  });
});

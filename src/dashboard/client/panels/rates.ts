import { legend } from "../charts/legend";
import { type StackColumn, stackedBars } from "../charts/stacked-bars";
import { fill, h } from "../dom";
import { num } from "../format";
import type { Progress } from "../types";

type Outcome = "emitted" | "duplicates" | "late" | "rejected";
type Counts = Record<Outcome, number>;

const RATE_SERIES: readonly (readonly [Outcome, string])[] = [
  ["emitted", "#2b8a3e"],
  ["duplicates", "#2f6fde"],
  ["late", "#e67700"],
  ["rejected", "#c62828"],
];
const MINUTE = 60000;
/** The most minutes the chart spans. */
const MINUTES_SHOWN = 180;

const noCounts = (): Counts => ({ emitted: 0, duplicates: 0, late: 0, rejected: 0 });

/** The Rows per minute panel: totals by outcome, and stacked bars per minute of commit time. */
export function renderRates(progress: Progress[]): void {
  const totals = { ...noCounts(), input: 0, conflicts: 0 };
  const buckets: Record<number, Counts> = {};
  for (const p of progress) {
    for (const r of RATE_SERIES) totals[r[0]] += p[r[0]];
    totals.input += p.input;
    totals.conflicts += p.conflicts || 0; // a subset of duplicates and rejected: a total, not a series
    const m = Math.floor(p.committedAt / MINUTE) * MINUTE;
    const b = buckets[m] || (buckets[m] = noCounts());
    for (const r of RATE_SERIES) b[r[0]] += p[r[0]];
  }
  const minutes = Object.keys(buckets)
    .map(Number)
    .sort((a, b) => a - b);
  // fill the minutes with no commits with zeros, so the lines drop to 0
  const full: number[] = [];
  if (minutes.length) {
    const last = minutes[minutes.length - 1];
    for (let m = Math.max(minutes[0], last - (MINUTES_SHOWN - 1) * MINUTE); m <= last; m += MINUTE) full.push(m);
  }
  const columns: StackColumn[] = full.map((m) => [m, buckets[m] || noCounts()]);
  const span = progress.length ? `over the last ${progress.length} batch${progress.length === 1 ? "" : "es"}` : "no batches yet";
  fill("rates", [
    h(
      "div",
      { class: "totals" },
      RATE_SERIES.map((r) => h("div", {}, [h("b", { id: `total-${r[0]}` }, [num(totals[r[0]])]), r[0]])).concat([
        h("div", {}, [h("b", { id: "total-input" }, [num(totals.input)]), "input rows"]),
        h("div", {}, [h("b", { id: "total-conflicts" }, [num(totals.conflicts)]), "conflicts"]),
      ]),
    ),
    stackedBars(columns, RATE_SERIES, { id: "rates", label: "rows per minute by outcome" }),
    legend(RATE_SERIES.map((r) => ({ name: r[0], color: r[1] }))),
    h("p", { class: "note" }, [`Rows per minute of commit time (UTC), by outcome, ${span}.`]),
  ]);
}

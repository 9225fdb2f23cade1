/** The advisor's figures as text for a terminal. */
import { renderHistogram, shortDuration } from "./histogram.ts";
import type { AdviceWithSketches } from "./advice.ts";
import type { DisorderFigures } from "./measure.ts";

const int = (n: number) => n.toLocaleString("en-US");
const pct = (share: number) => `${(100 * share).toFixed(share > 0 && share < 0.001 ? 3 : 2)}%`;
const iso = (ms: number | null) => (ms === null ? "–" : Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString().replace(".000Z", "Z") : String(ms));

/** 283_000 → "283 kB" (decimal units, as the README's tables). */
export function humanBytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : Number(v.toPrecision(3))} ${units[i]}`;
}

/** Columns aligned by `align`, one letter a column: l(eft) or r(ight); the first column left, the rest right by default. */
function table(rows: string[][], align = "l" + "r".repeat(rows[0].length - 1)): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map(
    (r) =>
      "  " +
      r
        .map((cell, c) => (align[c] === "r" ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
        .join("  ")
        .trimEnd(),
  );
}

const disorderRow = (name: string, d: DisorderFigures) => [
  name,
  int(d.events),
  `${int(d.outOfOrder)} (${pct(d.outOfOrderShare)})`,
  shortDuration(d.p50),
  shortDuration(d.p99),
  shortDuration(d["p99.9"]),
  shortDuration(d.max),
];

export function renderAdvice({ advice: a, sketches }: AdviceWithSketches): string {
  const out: string[] = [];
  const sources = Object.entries(a.disorder.sources);
  out.push(
    `history: ${int(a.events)} events from ${sources.length} source${sources.length === 1 ? "" : "s"}, ${iso(a.span.from)} → ${iso(a.span.to)} (${shortDuration(a.span.ms)} of event time)`,
  );
  out.push(
    ...table(
      [
        ["distinct keys", int(a.distinctKeys), ""],
        ["duplicates", int(a.duplicates), `(${pct(a.duplicateRate)} of rows)`],
        ["skipped rows", int(a.skipped.rows), ""],
      ],
      "lrl",
    ),
  );
  for (const e of a.skipped.examples) out.push(`    ${e}`);
  if (a.implausibleTimes > 0) {
    out.push(`  note: ${int(a.implausibleTimes)} numeric times are before 2001 as milliseconds: if they are epoch seconds, pass --unit s`);
  }

  const g = a.gaps;
  out.push("", `duplicate gaps: |T_copy − T_first| over ${int(g.count)} later copies`);
  if (g.count > 0) {
    out.push(
      `  p50 ${shortDuration(g.p50)}   p90 ${shortDuration(g.p90)}   p99 ${shortDuration(g.p99)}   p99.9 ${shortDuration(g["p99.9"])}   max ${shortDuration(g.max)}`,
    );
  }
  out.push(...renderHistogram(sketches.gaps));

  out.push("", "disorder: how far each event is behind the newest event time of its source");
  const rows = [["source", "events", "out of order", "p50", "p99", "p99.9", "max"]];
  for (const [name, d] of sources) rows.push(disorderRow(name, d));
  if (sources.length > 1) rows.push(disorderRow("(all)", a.disorder.overall));
  out.push(...table(rows));
  out.push(...renderHistogram(sketches.disorder));

  const r = a.recommendation;
  const s = a.simulation;
  out.push(
    "",
    `recommended watermarkDelay: "${r.watermarkDelay}"`,
    `  max(p99.9 gap, p99.9 disorder) × margin ${r.margin} ≤ max(${shortDuration(r.gapP999)}, ${shortDuration(r.disorderP999)}) × ${r.margin} = ${shortDuration(r.neededMs)}, rounded up`,
    ...(r.caveat ? [`  note: ${r.caveat}`] : []),
    `  this history replayed under it (within-watermark, each row its own batch):`,
  );
  out.push(
    ...table([
      ["duplicate copies caught", `${int(s.caught)} of ${int(s.copies)}`, s.copies === 0 ? "" : pct(s.caughtShare)],
      ["let through (emitted again)", int(s.letThrough), s.copies === 0 ? "" : pct(s.letThroughShare)],
      ["copies dropped as late", int(s.lateCopies), ""],
      ["late rows (T ≤ watermark)", `${int(s.late)} of ${int(s.rows)}`, pct(s.lateShare)],
    ]).map((l) => "  " + l),
  );

  const st = a.state;
  out.push("");
  if (st.ratePerSecond === null) out.push("state: the history spans no event time, so there is no rate to estimate it from");
  else {
    out.push(
      `state at ${Number(st.ratePerSecond.toPrecision(3))} events/s (${st.bytesPerKey} B per key: text keys of ~20 characters; hashed keys ~32, --bytes-per-key)`,
    );
    out.push(
      ...table([
        ["mode", "keys held", "bytes"],
        ["within-watermark", int(st.withinWatermark!.keys), humanBytes(st.withinWatermark!.bytes)],
        ["event-time-key", int(st.eventTimeKey!.keys), humanBytes(st.eventTimeKey!.bytes)],
        ["global", `+${int(st.global!.keysPerDay)} per day`, `+${humanBytes(st.global!.bytesPerDay)} per day`],
      ]),
    );
  }
  return out.join("\n") + "\n";
}

import { legend } from "../charts/legend";
import { type LineSeries, lineChart } from "../charts/line-chart";
import { fill, h } from "../dom";
import { ts } from "../format";
import type { Health, Progress, SourceInfo, StreamInfo } from "../types";

const COLORS = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#5f3dc4", "#e67700"];
/** How many samples per stream the page keeps (an hour at one refresh every 5 s). */
const SAMPLES_KEPT = 720;

/** A sample, taken by this page at each refresh, of each source's watermark and max event time (the API keeps the latest only). */
interface Sample {
  at: number;
  sources: Record<string, SourceInfo>;
}

/** Per stream, the samples taken since the page was opened. */
const samples = new Map<string, Sample[]>();

function sourceColor(names: string[], name: string): string {
  return COLORS[names.indexOf(name) % COLORS.length];
}

/** The sources panel: a table of each source's times, and a chart of the watermarks over time. */
export function renderSources(name: string, info: StreamInfo, health: Health, progress: Progress[]): void {
  const names = Object.keys(info.sources).sort();
  const now = Date.now();
  let hist = samples.get(name);
  if (!hist) samples.set(name, (hist = []));
  hist.push({ at: now, sources: info.sources });
  if (hist.length > SAMPLES_KEPT) hist.shift();

  const rows = names.map((n) => {
    const src = info.sources[n];
    const i = h("i");
    i.style.cssText = `display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;background:${sourceColor(names, n)}`;
    return h("tr", { "data-source": n }, [
      h("td", { class: "text" }, [i, n, health.heldBackBy === n ? h("span", { class: "held" }, ["  ◀ holds back"]) : ""]),
      h("td", {}, [ts(src.watermark)]),
      h("td", {}, [ts(src.maxEventTime)]),
      h("td", {}, [ts(src.lastBatchAt)]),
      h("td", { class: "text" }, [src.declared ? "declared" : "seen"]),
      h("td", { class: "text" }, [src.idle ? "idle" : "active"]),
    ]);
  });
  const table = h("div", { class: "scroll" }, [
    h("table", { id: "sources-table" }, [
      h("thead", {}, [
        h(
          "tr",
          {},
          ["Source", "Watermark", "Max event time", "Last batch", "Declared", "Activity"].map((t) => h("th", {}, [t])),
        ),
      ]),
      h("tbody", {}, rows),
    ]),
  ]);
  const series = watermarkSeries(names, info, progress, hist);
  const chart = lineChart(series, {
    id: "watermarks",
    label: "watermarks over time",
    width: 1240,
    height: 280,
    left: 130,
    yFormat: (v) => ts(Math.round(v / 1000) * 1000),
  });
  fill("sources", [
    table,
    chart,
    legend(series.filter((se) => !/ batches$/.test(se.name)).map((se) => ({ name: se.name + (se.dash ? " (dashed)" : ""), color: se.color }))),
    h("p", { class: "note" }, [
      "x: when (wall clock, UTC); y: event time. The global line is each commit's watermark after it (dots: the committing source). Per-source lines are sampled by this page every refresh since it was opened.",
    ]),
  ]);
}

/**
 * The global watermark after each commit (from /progress); each source's batches as dots on it;
 * each source's watermark and max event time as this page sampled them.
 */
function watermarkSeries(names: string[], info: StreamInfo, progress: Progress[], hist: Sample[]): LineSeries[] {
  const ordered = progress.slice().sort((a, b) => a.committedAt - b.committedAt);
  const series: LineSeries[] = [
    {
      name: "global watermark",
      color: "#1d2330",
      width: 2.5,
      points: ordered.filter((p) => p.watermarkAfter > 0).map((p) => [p.committedAt, p.watermarkAfter]),
    },
  ];
  for (const n of names) {
    const color = sourceColor(names, n);
    series.push({
      name: `${n} batches`,
      color,
      dotsOnly: true,
      points: ordered.filter((p) => p.source === n && p.watermarkAfter > 0).map((p) => [p.committedAt, p.watermarkAfter]),
    });
    const wm: [number, number][] = [];
    const mx: [number, number][] = [];
    const lastCommit = ordered.filter((p) => p.source === n).pop();
    const first = info.sources[n];
    if (lastCommit && first.lastBatchAt && first.lastBatchAt < hist[0].at) {
      // known since this source's last batch: the values it has now
      if (first.watermark > 0) wm.push([first.lastBatchAt, first.watermark]);
      if (first.maxEventTime) mx.push([first.lastBatchAt, first.maxEventTime]);
    }
    for (const sm of hist) {
      const v = sm.sources[n];
      if (!v) continue;
      if (v.watermark > 0) wm.push([sm.at, v.watermark]);
      if (v.maxEventTime) mx.push([sm.at, v.maxEventTime]);
    }
    series.push({ name: `${n} watermark`, color, points: wm });
    series.push({ name: `${n} max event time`, color, dash: "4 3", width: 1.5, points: mx });
  }
  return series;
}

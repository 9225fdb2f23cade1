/** A terminal histogram of a duration sketch: log-spaced bins, unicode block bars. */
import type { QuantileSketch } from "./sketch.ts";

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;
/** Upper edges (inclusive) of the bins, about ×3 apart; the last bin is open. */
export const HISTOGRAM_EDGES: readonly number[] = [
  10,
  100,
  1 * S,
  3 * S,
  10 * S,
  30 * S,
  1 * MIN,
  3 * MIN,
  10 * MIN,
  30 * MIN,
  1 * H,
  3 * H,
  6 * H,
  12 * H,
  1 * D,
  3 * D,
  7 * D,
];

/** A short human duration: "0", "850 ms", "12.5 s", "4.2 min", "1.5 h", "2.1 d". */
export function shortDuration(ms: number | null): string {
  if (ms === null) return "–";
  if (ms === 0) return "0";
  const one = (v: number, unit: string) => `${v >= 100 ? Math.round(v) : Number(v.toPrecision(3))} ${unit}`;
  if (ms < S) return one(ms, "ms");
  if (ms < MIN) return one(ms / S, "s");
  if (ms < H) return one(ms / MIN, "min");
  if (ms < D) return one(ms / H, "h");
  return one(ms / D, "d");
}

const EIGHTHS = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

/** A bar of `value / max × width` cells in eighths; a non-zero value shows at least ▏. */
export function bar(value: number, max: number, width: number): string {
  if (value <= 0 || max <= 0) return "";
  const eighths = Math.max(1, Math.round((value / max) * width * 8));
  return "█".repeat(Math.floor(eighths / 8)) + EIGHTHS[eighths % 8];
}

export interface HistogramBin {
  label: string;
  count: number;
}

/** The sketch's counts per bin: "0" (exactly), "≤ 10 ms", …, "> 7 d"; empty bins at either end left out. */
export function histogramBins(sketch: QuantileSketch): HistogramBin[] {
  const counts = new Array<number>(HISTOGRAM_EDGES.length + 1).fill(0);
  let zero = 0;
  for (const b of sketch.buckets()) {
    if (b.upper === 0) {
      zero += b.count;
      continue;
    }
    const v = Math.sqrt(b.lower * b.upper); // the bucket's middle; bins are far wider than buckets
    let i = HISTOGRAM_EDGES.findIndex((edge) => v <= edge);
    if (i === -1) i = HISTOGRAM_EDGES.length;
    counts[i] += b.count;
  }
  const bins: HistogramBin[] = counts.map((count, i) => ({
    label: i < HISTOGRAM_EDGES.length ? `≤ ${shortDuration(HISTOGRAM_EDGES[i])}` : `> ${shortDuration(HISTOGRAM_EDGES[HISTOGRAM_EDGES.length - 1])}`,
    count,
  }));
  const first = bins.findIndex((b) => b.count > 0);
  const last = bins.length - 1 - [...bins].reverse().findIndex((b) => b.count > 0);
  const inner = first === -1 ? [] : bins.slice(first, last + 1);
  return zero > 0 ? [{ label: "0", count: zero }, ...inner] : inner;
}

/** The histogram as lines: label, bar, count and share. */
export function renderHistogram(sketch: QuantileSketch, width = 40): string[] {
  const bins = histogramBins(sketch);
  if (bins.length === 0) return ["  (none)"];
  const max = Math.max(...bins.map((b) => b.count));
  const labelWidth = Math.max(...bins.map((b) => b.label.length));
  const countWidth = Math.max(...bins.map((b) => b.count.toLocaleString("en-US").length));
  return bins.map((b) => {
    const share = sketch.count === 0 ? 0 : (100 * b.count) / sketch.count;
    return `  ${b.label.padStart(labelWidth)} │${bar(b.count, max, width).padEnd(width)} ${b.count.toLocaleString("en-US").padStart(countWidth)}  ${share.toFixed(1).padStart(5)}%`;
  });
}

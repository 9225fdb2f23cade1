import { s } from "../dom";
import { clock, num } from "../format";

/** A series of a stacked chart: [name, color]. */
export type StackSeries = readonly [string, string];
/** One column: [minute (epoch ms), value per series name]. */
export type StackColumn = [number, Record<string, number>];

/** Stacked bars, one column per minute, on an axis of whole, round steps. */
export function stackedBars(columns: StackColumn[], series: readonly StackSeries[], opt: { id: string; label: string }): SVGElement {
  const W = 640;
  const H = 220;
  const L = 44;
  const R = 10;
  const T = 14;
  const B = 26;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opt.label, "data-chart": opt.id });
  if (columns.length === 0) {
    svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no batches yet"));
    return svg;
  }
  const totals = columns.map((c) => series.reduce((a, se) => a + c[1][se[0]], 0));
  // whole, round steps (1, 2, 5 × 10^n) up to at least the tallest bar
  const tallest = Math.max(1, ...totals);
  const pow = Math.pow(10, Math.floor(Math.log10(Math.max(1, tallest / 4))));
  const step = [1, 2, 5, 10].map((m) => m * pow).filter((st) => st * 4 >= tallest)[0] || 10 * pow;
  const ticks = Math.ceil(tallest / step);
  const max = ticks * step;
  const slot = (W - L - R) / columns.length;
  const bw = Math.max(1, Math.min(40, slot * 0.75));
  const Y = (v: number) => ((H - T - B) * v) / max;
  for (let i = 0; i <= ticks; i++) {
    const y = H - B - Y(step * i);
    svg.append(s("line", { x1: L, x2: W - R, y1: y, y2: y, class: "axis", "stroke-dasharray": i ? "2 3" : "" }));
    svg.append(s("text", { x: L - 4, y: y + 3, "text-anchor": "end" }, num(step * i)));
  }
  const every = Math.ceil(columns.length / 8);
  columns.forEach((c, j) => {
    const x = L + slot * j + (slot - bw) / 2;
    let base = H - B;
    for (const se of series) {
      const v = c[1][se[0]];
      if (!v) continue;
      const hgt = Y(v);
      const r = s("rect", { x, y: base - hgt, width: bw, height: hgt, fill: se[1], "data-series": se[0], "data-value": v, "data-minute": c[0] });
      r.append(s("title", {}, `${clock(c[0]).slice(0, 5)}: ${num(v)} ${se[0]}`));
      svg.append(r);
      base -= hgt;
    }
    if (totals[j] > 0 && columns.length <= 30) svg.append(s("text", { x: x + bw / 2, y: base - 3, "text-anchor": "middle" }, num(totals[j])));
    if (j % every === 0) svg.append(s("text", { x: x + bw / 2, y: H - 8, "text-anchor": "middle" }, `${clock(c[0]).slice(0, 5)}Z`));
  });
  return svg;
}

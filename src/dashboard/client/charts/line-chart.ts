import { s } from "../dom";
import { clock } from "../format";

/** One line of a line chart: points [x, y]; drawn as dots too when dots, as dots only when dotsOnly. */
export interface LineSeries {
  name: string;
  color: string;
  points: [number, number][];
  width?: number;
  dash?: string;
  dots?: boolean;
  dotsOnly?: boolean;
}

export interface LineChartOptions {
  id: string;
  label: string;
  yFormat: (y: number) => string;
  width?: number;
  height?: number;
  left?: number;
  yZero?: boolean;
}

/** A line chart of these series, with time (UTC) on the x axis. */
export function lineChart(series: LineSeries[], opt: LineChartOptions): SVGElement {
  const W = opt.width || 640;
  const H = opt.height || 220;
  const L = opt.left || 60;
  const R = 12;
  const T = 10;
  const B = 26;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opt.label, "data-chart": opt.id });
  const pts = series.flatMap((se) => se.points);
  if (pts.length === 0) {
    svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no data yet"));
    return svg;
  }
  let x0 = Math.min(...pts.map((p) => p[0]));
  let x1 = Math.max(...pts.map((p) => p[0]));
  let y0 = Math.min(...pts.map((p) => p[1]));
  let y1 = Math.max(...pts.map((p) => p[1]));
  if (opt.yZero) y0 = Math.min(0, y0);
  if (x1 === x0) {
    x0 -= 30000;
    x1 += 30000;
  }
  if (y1 === y0) {
    const pad = Math.max(1, Math.abs(y0) * 0.001);
    y0 -= pad;
    y1 += pad;
  }
  const X = (x: number) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const Y = (y: number) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  svg.append(s("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
  svg.append(s("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
  for (let i = 0; i <= 4; i++) {
    const yv = y0 + ((y1 - y0) * i) / 4;
    const xv = x0 + ((x1 - x0) * i) / 4;
    svg.append(s("line", { x1: L, x2: W - R, y1: Y(yv), y2: Y(yv), class: "axis", "stroke-dasharray": "2 3" }));
    svg.append(s("text", { x: L - 4, y: Y(yv) + 3, "text-anchor": "end" }, opt.yFormat(yv)));
    svg.append(s("text", { x: X(xv), y: H - 8, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, clock(xv)));
  }
  for (const se of series) {
    if (se.points.length === 0) continue;
    const d = se.points.map((p, j) => `${j ? "L" : "M"}${X(p[0]).toFixed(1)} ${Y(p[1]).toFixed(1)}`).join(" ");
    if (se.points.length > 1 && !se.dotsOnly) {
      svg.append(s("path", { d, fill: "none", stroke: se.color, "stroke-width": se.width || 2, "stroke-dasharray": se.dash || "", "data-series": se.name }));
    }
    if (se.dots || se.points.length === 1 || se.dotsOnly) {
      for (const p of se.points) {
        const c = s("circle", { cx: X(p[0]), cy: Y(p[1]), r: 3, fill: se.color, "data-series": se.name });
        c.append(s("title", {}, `${se.name}: ${opt.yFormat(p[1])} at ${clock(p[0])}`));
        svg.append(c);
      }
    }
  }
  return svg;
}

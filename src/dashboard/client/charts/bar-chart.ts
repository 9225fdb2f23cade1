import { s } from "../dom";

export interface Bar {
  label: string;
  value: number;
}

export interface BarChartOptions {
  id: string;
  label: string;
  color: string;
  /** the bars' class, after "bar" */
  cls: string;
  format: (v: number) => string;
}

/** A bar chart, one bar per partition; labelled when there are at most 32. */
export function barChart(items: Bar[], opt: BarChartOptions): SVGElement {
  const W = 640;
  const H = 170;
  const L = 70;
  const R = 10;
  const T = 16;
  const B = 22;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opt.label, "data-chart": opt.id });
  const max = Math.max(1, ...items.map((it) => it.value));
  const slot = (W - L - R) / Math.max(1, items.length);
  const bw = Math.max(2, Math.min(48, slot * 0.7));
  svg.append(s("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
  svg.append(s("text", { x: L - 4, y: T + 3, "text-anchor": "end" }, opt.format(max)));
  svg.append(s("text", { x: L - 4, y: H - B, "text-anchor": "end" }, opt.format(0)));
  items.forEach((it, i) => {
    const hgt = ((H - T - B) * it.value) / max;
    const x = L + slot * i + (slot - bw) / 2;
    const r = s("rect", {
      x,
      y: H - B - hgt,
      width: bw,
      height: Math.max(hgt, 0.5),
      fill: opt.color,
      class: `bar ${opt.cls}`,
      "data-partition": it.label,
      "data-value": it.value,
    });
    r.append(s("title", {}, `partition ${it.label}: ${opt.format(it.value)}`));
    svg.append(r);
    if (items.length <= 32) {
      svg.append(s("text", { x: x + bw / 2, y: H - 8, "text-anchor": "middle" }, it.label));
      if (hgt > 0) svg.append(s("text", { x: x + bw / 2, y: H - B - hgt - 3, "text-anchor": "middle" }, opt.format(it.value)));
    }
  });
  return svg;
}

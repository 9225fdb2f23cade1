import { h } from "../dom";

/** A chart's legend: a colored square and a name per series. */
export function legend(series: { name: string; color: string }[]): HTMLElement {
  return h(
    "div",
    { class: "legend" },
    series.map((se) => {
      const i = h("i");
      i.style.background = se.color;
      return h("span", {}, [i, se.name]);
    }),
  );
}

import { fill, h } from "../dom";
import { dur, num } from "../format";
import type { Advice, AdviceFigures } from "../types";

const COLUMNS = ["Source", "Rows", "Duplicates", "Gap p99.9", "Disorder p99.9", "Recommended", "Current", "Verdict"];

/** A quantile of time: ms below a second, else as a duration. */
function q(v: number | null | undefined): string {
  return v === null || v === undefined ? "—" : v === 0 ? "0" : v < 1000 ? `${num(v)} ms` : dur(v);
}

/** Whether the configured delay covers the recommended one. */
function verdict(f: AdviceFigures): string {
  if (!f.currentDelay) return "—";
  const r = f.recommendation.delayMs;
  const c = f.currentDelay.ms;
  return c < r ? `raise to ${f.recommendation.watermarkDelay}` : c > 2 * r ? `could be ${f.recommendation.watermarkDelay}` : "covers it";
}

function row(name: string, f: AdviceFigures, cls?: string): HTMLElement {
  return h("tr", { "data-advice": name, class: cls || "" }, [
    h("td", { class: "text" }, [name]),
    h("td", {}, [num(f.rows)]),
    h("td", { "data-figure": "duplicate-rate" }, [`${num(f.duplicates)} (${(100 * f.duplicateRate).toFixed(1)}%)`]),
    h("td", { "data-figure": "gap-p999" }, [q(f.gaps["p99.9"])]),
    h("td", { "data-figure": "disorder-p999" }, [q(f.disorder["p99.9"])]),
    h("td", { "data-figure": "recommended" }, [f.recommendation.watermarkDelay]),
    h("td", { "data-figure": "current" }, [f.currentDelay ? f.currentDelay.interval : "—"]),
    h("td", { "data-figure": "verdict", class: `text${f.currentDelay && f.currentDelay.ms < f.recommendation.delayMs ? " held" : ""}` }, [verdict(f)]),
  ]);
}

/** The Delay advisor panel, live (GET /advice): per source and over all, what edge-dedup advise would say of what was received. */
export function renderAdvice(advice: Advice): void {
  const names = Object.keys(advice.sources).sort();
  const rec = advice.overall.recommendation;
  const current = advice.overall.currentDelay;
  fill("advice", [
    h("div", { class: "scroll" }, [
      h("table", { id: "advice-table" }, [
        h("thead", {}, [
          h(
            "tr",
            {},
            COLUMNS.map((c, i) => h("th", { class: i === 0 || i === 7 ? "text" : "" }, [c])),
          ),
        ]),
        h(
          "tbody",
          {},
          names.length
            ? names.map((n) => row(n, advice.sources[n])).concat(names.length > 1 ? [row("(stream)", advice.overall, "total")] : [])
            : [h("tr", {}, [h("td", { colspan: COLUMNS.length, class: "text" }, ["No rows yet."])])],
        ),
      ]),
    ]),
    h("p", { class: "note", id: "advice-recommendation" }, [
      `Recommended for the stream: ${rec.watermarkDelay} (${rec.basis}), the larger p99.9 × ${advice.margin} rounded up, as edge-dedup advise computes it over a history` +
        (rec.floor ? `, raised to its floor: ${rec.floor.reason}` : "") +
        "; " +
        (current ? `configured: ${current.interval}.` : "no event time configured."),
    ]),
    rec.caveat ? h("p", { class: "note held", id: "advice-caveat" }, [`Caution, ${rec.caveat}.`]) : "",
    h("p", { class: "note" }, [
      "Gap: event time between a duplicate and the copy kept. Disorder: how far a row is behind its source's newest event time. Counted since the stream was created.",
    ]),
  ]);
}

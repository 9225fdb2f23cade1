import { fill, h } from "../dom";
import { bytes, num, ts } from "../format";
import type { Progress } from "../types";

const COLUMNS = [
  "Committed",
  "Source",
  "Batch",
  "Input",
  "Emitted",
  "Dups",
  "Late",
  "Rejected",
  "Conflicts",
  "Watermark after",
  "State rows",
  "State bytes",
  "ms",
];

/** The Recent batches panel: the last 20 commits, newest first. */
export function renderBatches(progress: Progress[]): void {
  const recent = progress.slice(-20).reverse();
  fill("batches", [
    h("div", { class: "scroll" }, [
      h("table", { id: "batches-table" }, [
        h("thead", {}, [
          h(
            "tr",
            {},
            COLUMNS.map((c, i) => h("th", { class: i < 3 ? "text" : "" }, [c])),
          ),
        ]),
        h(
          "tbody",
          {},
          recent.length
            ? recent.map((p) =>
                h("tr", { "data-batch": p.batchId }, [
                  h("td", { class: "text" }, [ts(p.committedAt)]),
                  h("td", { class: "text" }, [p.source]),
                  h("td", { class: "text", title: p.batchId }, [p.batchId.length > 24 ? `${p.batchId.slice(0, 22)}…` : p.batchId]),
                  h("td", {}, [num(p.input)]),
                  h("td", {}, [num(p.emitted)]),
                  h("td", {}, [num(p.duplicates)]),
                  h("td", {}, [num(p.late)]),
                  h("td", {}, [num(p.rejected)]),
                  h("td", { "data-figure": "conflicts" }, [num(p.conflicts || 0)]),
                  h("td", {}, [ts(p.watermarkAfter)]),
                  h("td", {}, [num(p.numRowsTotal)]),
                  h("td", {}, [bytes(p.stateBytes)]),
                  h("td", {}, [num(p.durationMs)]),
                ]),
              )
            : [h("tr", {}, [h("td", { colspan: COLUMNS.length, class: "text" }, ["No batches committed yet."])])],
        ),
      ]),
    ]),
  ]);
}

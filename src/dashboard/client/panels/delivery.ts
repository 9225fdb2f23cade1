import { fill, h } from "../dom";
import { dur, num, ts } from "../format";
import type { Destination } from "../types";

const COLUMNS = ["Destination", "Type", "Target", "Delivered seq", "Pending", "Lag", "Failing", "Dead", "Last success", "Last error"];

/** The Delivery panel (GET /destinations): per destination, how far it has delivered, how far behind it is, whether it is failing. */
export function renderDelivery(list: Destination[]): void {
  fill("delivery", [
    h("div", { class: "scroll" }, [
      h("table", { id: "delivery-table" }, [
        h("thead", {}, [
          h(
            "tr",
            {},
            COLUMNS.map((c, i) => h("th", { class: i < 3 || i === 9 ? "text" : "" }, [c])),
          ),
        ]),
        h(
          "tbody",
          {},
          list.length
            ? list.map((d) =>
                h("tr", { "data-destination": d.name }, [
                  h("td", { class: "text" }, [d.name]),
                  h("td", { class: "text" }, [d.type]),
                  h("td", { class: "text" }, [d.url || d.binding || "—"]),
                  h("td", { "data-figure": "delivered-seq" }, [num(d.deliveredSeq)]),
                  h("td", { "data-figure": "pending" }, [num(d.pending)]),
                  h("td", { "data-figure": "lag" }, [d.lagMs ? dur(d.lagMs) : "0"]),
                  h("td", { "data-figure": "failing", class: d.failing ? "held" : "" }, [d.paused ? "paused" : d.failing ? "yes" : "no"]),
                  h("td", { "data-figure": "dead" }, [num(d.dead)]),
                  h("td", {}, [ts(d.lastSuccessAt)]),
                  h("td", { class: "text" }, [d.lastError || "—"]),
                ]),
              )
            : [h("tr", {}, [h("td", { colspan: COLUMNS.length, class: "text" }, ["No destinations: PUT /v1/streams/{stream}/destinations/{name} adds one."])])],
        ),
      ]),
    ]),
  ]);
}

import type { DestinationDetail } from "../delivery-figures";
import { byId, h } from "../dom";
import { dur, num, ts } from "../format";
import type { Destination } from "../types";
import { attemptFinder, renderAttempts } from "./attempts";
import { renderDeadLane } from "./dead-lane";

const COLUMNS = ["Destination", "Type", "Target", "Delivered seq", "Pending", "Lag", "Failing", "Dead", "Last success", "Last error"];
/** How many of the busiest lanes the lanes line names. */
const BUSIEST = 3;

/** One destination's part under the table; its finder and replay notice stay put while the rest is redrawn at each refresh. */
interface Block {
  root: HTMLElement;
  lanes: HTMLElement;
  dead: HTMLElement;
  attempts: HTMLElement;
  notice: HTMLElement;
}

/** The blocks drawn, by stream and destination name. */
const blocks = new Map<string, Block>();

function blockOf(stream: string, name: string): Block {
  const key = `${stream}\n${name}`;
  let b = blocks.get(key);
  if (!b) {
    const lanes = h("p", { "data-figure": "lanes" });
    const dead = h("div");
    const attempts = h("div");
    const notice = h("p", { class: "note", "data-role": "replayed", "aria-live": "polite" });
    const root = h("div", { class: "destination", "data-destination-detail": name }, [
      h("h3", {}, [name]),
      lanes,
      notice,
      dead,
      attempts,
      attemptFinder(stream, name),
    ]);
    blocks.set(key, (b = { root, lanes, dead, attempts, notice }));
  }
  return b;
}

/** The Delivery panel (GET /destinations): per destination, how far it has delivered, how far behind it is, whether it is failing; then each one's lanes, dead lane and attempts. */
export function renderDelivery(stream: string, list: Destination[], details: Map<string, DestinationDetail>): void {
  const panel = byId("delivery");
  if (!panel.firstElementChild) panel.append(h("div", { class: "scroll" }), h("div", { class: "destinations" }));
  const [table, under] = [panel.children[0] as HTMLElement, panel.children[1] as HTMLElement];
  table.replaceChildren(statusTable(list));

  const shown = list.map((d) => blockOf(stream, d.name));
  for (const key of [...blocks.keys()]) if (!shown.includes(blocks.get(key)!)) blocks.delete(key);
  // Moved only when the list changed: a block taken out and put back would lose the finder's focus.
  if (shown.length !== under.children.length || shown.some((b, i) => under.children[i] !== b.root)) under.replaceChildren(...shown.map((b) => b.root));
  list.forEach((d, i) => {
    const b = shown[i];
    const detail = details.get(d.name) ?? { dead: [], attempts: [] };
    b.lanes.textContent = lanesLine(d);
    b.dead.replaceChildren(renderDeadLane({ stream, name: d.name, dead: d.dead, notice: b.notice }, detail.dead));
    b.attempts.replaceChildren(renderAttempts(detail.attempts));
  });
}

/** "16 lanes · ordered by account · ≤ 50/s", then the busiest lanes' pending rows and lag. */
export function lanesLine(d: Destination): string {
  const order = d.ordering === "none" ? "no order" : `ordered by ${d.ordering.by.join(", ")}`;
  const cap = d.maxPerSecond === null ? "no rate cap" : `≤ ${num(d.maxPerSecond)}/s`;
  const busiest = d.laneStatus
    .filter((l) => l.pending > 0)
    .sort((a, b) => b.pending - a.pending || b.lagMs - a.lagMs)
    .slice(0, BUSIEST)
    .map((l) => `lane ${l.lane}: ${num(l.pending)} pending, ${dur(l.lagMs)} behind`);
  return `${num(d.lanes)} lane${d.lanes === 1 ? "" : "s"} · ${order} · ${cap} — ${busiest.length ? `busiest: ${busiest.join("; ")}` : "no lane has rows pending"}`;
}

function statusTable(list: Destination[]): HTMLElement {
  return h("table", { id: "delivery-table" }, [
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
  ]);
}

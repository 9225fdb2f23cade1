import { failure } from "../api";
import { replayDead } from "../delivery-figures";
import { h } from "../dom";
import { num, ts } from "../format";
import type { DeadRow } from "../types";
import { requestRefresh } from "../view";
import { attemptList } from "./attempts";

const COLUMNS = ["Webhook-id", "Commit", "Died at", "Attempts", "Last error", "History"];

/** The dead rows whose history the operator opened, by stream, destination and webhook-id: a refresh redraws them open. */
const opened = new Set<string>();

const rows = (n: number) => `${num(n)} dead row${n === 1 ? "" : "s"}`;

/** Where a destination's dead lane is drawn, and where the outcome of a replay is said (it outlives the redraws). */
export interface DeadLanePlace {
  stream: string;
  name: string;
  /** rows in the dead lane (the table shows the first DEAD_SHOWN) */
  dead: number;
  notice: HTMLElement;
}

/** The dead lane: each row's id, when it died, its attempts and last error, its last attempts beside it; and the replay button. */
export function renderDeadLane(at: DeadLanePlace, dead: DeadRow[] | string): HTMLElement {
  const title = h("h4", {}, [`Dead lane (${num(at.dead)})`]);
  if (typeof dead === "string") return h("div", { class: "dead-lane" }, [title, h("p", { class: "held" }, [dead])]);
  if (!dead.length)
    return h("div", { class: "dead-lane" }, [title, h("p", { class: "note" }, ["No dead rows: every row was delivered, or is still being retried."])]);
  const fromSeq = Math.min(...dead.map((r) => r.seq));
  const more = at.dead > dead.length ? h("p", { class: "note" }, [`the first ${num(dead.length)} of ${rows(at.dead)} (GET …/dead?after= pages on)`]) : "";
  return h("div", { class: "dead-lane" }, [
    title,
    h("p", {}, [replayButton(at, fromSeq)]),
    h("div", { class: "scroll" }, [
      h("table", { class: "dead-table" }, [
        h("thead", {}, [
          h(
            "tr",
            {},
            COLUMNS.map((c, i) => h("th", { class: i === 0 || i >= 4 ? "text" : "" }, [c])),
          ),
        ]),
        h(
          "tbody",
          {},
          dead.map((r) =>
            h("tr", { "data-dead-id": r.id }, [
              h("td", { class: "text", "data-field": "id" }, [r.id]),
              h("td", { "data-field": "seq" }, [num(r.seq)]),
              h("td", { "data-field": "died-at" }, [ts(r.diedAt)]),
              h("td", { "data-field": "attempts" }, [num(r.attempts)]),
              h("td", { class: "text", "data-field": "last-error" }, [r.lastError ?? "—"]),
              h("td", { class: "text" }, [history(`${at.stream}\n${at.name}\n${r.id}`, r)]),
            ]),
          ),
        ),
      ]),
    ]),
    more,
  ]);
}

/** A dead row's last attempts, folded under "N attempts"; open, it stays open through refreshes. */
function history(key: string, r: DeadRow): HTMLElement {
  const el = h("details", { "data-role": "history" }, [
    h("summary", {}, [`last ${num(r.history.length)} attempts`]),
    attemptList(r.history),
  ]) as HTMLDetailsElement;
  el.open = opened.has(key);
  el.addEventListener("toggle", () => (el.open ? opened.add(key) : opened.delete(key)));
  return el;
}

/** Replay from the lowest dead row's commit (each shard's, on a stream of several): asks first, then says what the server took back and refreshes. */
function replayButton(at: DeadLanePlace, fromSeq: number): HTMLElement {
  const button = h("button", { type: "button", "data-role": "replay" }, [`Replay ${rows(at.dead)}`]) as HTMLButtonElement;
  button.addEventListener("click", () => {
    const question =
      `Send the ${rows(at.dead)} of destination "${at.name}" again?\n\n` +
      `Every row from commit ${fromSeq} on is sent again (those delivered since too; with several shards, from each shard's oldest dead row), with the webhook-ids they had.`;
    if (!window.confirm(question)) return;
    button.disabled = true;
    at.notice.textContent = `asking to replay from commit ${fromSeq}…`;
    replayDead(at.stream, at.name).then(
      (r) => {
        const from = r.fromSeqs ? `commits ${r.fromSeqs.join(", ")}` : r.fromSeq === undefined ? "nowhere (no dead row left)" : `commit ${r.fromSeq}`;
        at.notice.textContent = `replaying ${rows(r.fromDead)} from ${from}`;
        requestRefresh();
      },
      (e: unknown) => {
        at.notice.textContent = `replay failed: ${failure(e)}`;
        button.disabled = false;
      },
    );
  });
  return button;
}

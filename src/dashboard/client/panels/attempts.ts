import { failure } from "../api";
import { findAttempts } from "../delivery-figures";
import { h } from "../dom";
import { num, ts } from "../format";
import type { Attempt, RowAttempts } from "../types";

const COLUMNS = ["State", "Webhook-id", "Attempts", "Last attempt", "Status", "Took", "Error", "Next attempt"];

/** An attempt's status as the page says it: the HTTP status, or "no answer" (a queue's send: "sent" or "no answer"). */
function statusOf(a: Attempt): string {
  return a.status !== null ? String(a.status) : a.error === null ? "sent" : "no answer";
}

/** A row's attempts, oldest first, one line each: when, status, how long, why it failed. */
export function attemptList(attempts: Attempt[]): HTMLElement {
  if (!attempts.length) return h("p", { class: "note" }, ["no attempt yet"]);
  return h(
    "ol",
    { class: "attempts" },
    attempts.map((a) =>
      h("li", { "data-attempt": "" }, [
        h("span", { "data-field": "at" }, [ts(a.at)]),
        " · ",
        h("span", { "data-field": "status" }, [statusOf(a)]),
        " · ",
        h("span", { "data-field": "ms" }, [`${num(a.ms)} ms`]),
        " · ",
        h("span", { "data-field": "error" }, [a.error ?? "delivered"]),
      ]),
    ),
  );
}

/** The rows worth a look (failing pending first, then the newest dead, then the newest delivered), each with its last attempt. */
export function renderAttempts(rows: RowAttempts[] | string): HTMLElement {
  const title = h("h4", {}, ["Recent attempts"]);
  if (typeof rows === "string") return h("div", { class: "attempts-recent" }, [title, h("p", { class: "held" }, [rows])]);
  const body = rows.length
    ? rows.map((r) => {
        const last = r.attempts[r.attempts.length - 1];
        return h("tr", { "data-attempt-id": r.id, "data-state": r.state }, [
          h("td", { class: `text${r.state === "delivered" ? "" : " held"}`, "data-field": "state" }, [r.state]),
          h("td", { class: "text", "data-field": "id" }, [r.id]),
          h("td", { "data-field": "attempts" }, [num(r.attempts.length)]),
          h("td", {}, [last ? ts(last.at) : "—"]),
          h("td", { "data-field": "status" }, [last ? statusOf(last) : "—"]),
          h("td", { "data-field": "ms" }, [last ? `${num(last.ms)} ms` : "—"]),
          h("td", { class: "text", "data-field": "error" }, [last?.error ?? "—"]),
          h("td", { "data-field": "next" }, [r.state === "pending" ? ts(r.nextAt) : "—"]),
        ]);
      })
    : [h("tr", {}, [h("td", { colspan: COLUMNS.length, class: "text" }, ["No attempts kept yet: no row has been sent."])])];
  return h("div", { class: "attempts-recent" }, [
    title,
    h("div", { class: "scroll" }, [
      h("table", { class: "attempts-table" }, [
        h("thead", {}, [
          h(
            "tr",
            {},
            COLUMNS.map((c, i) => h("th", { class: i < 2 || i === 6 ? "text" : "" }, [c])),
          ),
        ]),
        h("tbody", {}, body),
      ]),
    ]),
  ]);
}

/** "Find by webhook-id": a form that reads one row's attempts (GET …/attempts?id=) and shows them, or the server's reason it has none. */
export function attemptFinder(stream: string, name: string): HTMLElement {
  const input = h("input", {
    type: "search",
    name: "webhook-id",
    placeholder: `webhook-id, e.g. ${stream}.1.0`,
    size: 30,
    spellcheck: "false",
    "aria-label": "webhook-id",
  }) as HTMLInputElement;
  const found = h("div", { class: "found", "data-role": "found", "aria-live": "polite" });
  const form = h("form", { class: "find", autocomplete: "off" }, [
    h("label", {}, ["Find by webhook-id ", input]),
    " ",
    h("button", { type: "submit" }, ["Find"]),
  ]);
  let asked = 0; // only the latest search's answer shows
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = input.value.trim();
    if (!id) return;
    const mine = ++asked;
    found.replaceChildren(h("p", { class: "note" }, [`reading ${id}…`]));
    const show = (el: HTMLElement) => mine === asked && found.replaceChildren(el);
    findAttempts(stream, name, id).then(
      (row) =>
        show(
          row
            ? h("div", { "data-found-id": row.id, "data-state": row.state }, [
                h("p", {}, [h("b", { "data-field": "state" }, [row.state]), " ", row.id, row.state === "pending" ? ` · next attempt ${ts(row.nextAt)}` : ""]),
                attemptList(row.attempts),
              ])
            : h("p", { class: "note" }, [`no row ${id}`]),
        ),
      (e: unknown) => show(h("p", { class: "held", "data-role": "not-found" }, [failure(e)])),
    );
  });
  return h("div", { class: "finder" }, [form, found]);
}

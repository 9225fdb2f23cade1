import { fill, h } from "../dom";
import { dur } from "../format";
import type { Health, WebhookTally } from "../types";

/** The Health panel: the status badge, its reasons, which source holds the watermark back. */
export function renderHealth(health: Health): void {
  const kids: HTMLElement[] = [h("span", { id: "status", class: `badge ${health.status}` }, [health.status])];
  if (health.reasons.length) {
    kids.push(
      h(
        "ul",
        { class: "reasons", id: "reasons" },
        health.reasons.map((r) => h("li", { class: r.severity, "data-code": r.code }, [`${r.code}: ${r.detail}`])),
      ),
    );
  } else kids.push(h("p", { class: "note", id: "reasons" }, ["No reasons: nothing looks wrong in the recent window."]));
  kids.push(
    h("dl", { class: "kv" }, [
      h("dt", {}, ["Held back by"]),
      h("dd", { id: "held-back-by", class: health.heldBackBy ? "held" : "" }, [health.heldBackBy || "— (no source holds the watermark back)"]),
      h("dt", {}, ["Watermark lag"]),
      h("dd", {}, [health.watermarkLagMs ? dur(health.watermarkLagMs) : "0"]),
      h("dt", {}, ["Idle sources"]),
      h("dd", {}, [health.idleSources.length ? health.idleSources.join(", ") : "none"]),
      h("dt", {}, ["Webhooks"]),
      h("dd", { id: "webhooks" }, [webhooksText(health.webhooks)]),
    ]),
  );
  fill("health", kids);
}

// Each webhook source's redeliveries absorbed as replays and signatures refused, by reason (src/webhooks/tally.ts).
function webhooksText(all: Record<string, WebhookTally> | null | undefined): string {
  const tallies = all || {};
  const names = Object.keys(tallies).sort();
  if (!names.length) return "none counted";
  return names
    .map((n) => {
      const w = tallies[n];
      const refused = Object.keys(w.refused)
        .sort()
        .map((r) => `${w.refused[r]} ${r}`);
      return `${n}: ${w.replayed} redeliveries replayed, ${refused.length ? `refused ${refused.join(", ")}` : "none refused"}`;
    })
    .join("; ");
}

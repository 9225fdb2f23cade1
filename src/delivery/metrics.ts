import type { DestinationStatus } from "./status";

/**
 * Delivery's part of GET /metrics (Prometheus text): per destination, its lag,
 * backlog, failing flag, dead lane, delivered seq and attempt counters. Pure:
 * the route gathers the statuses.
 */
type Figures = Pick<DestinationStatus, "stream" | "name" | "type" | "lagMs" | "pending" | "failing" | "dead" | "deliveredSeq" | "delivered" | "failures">;

export function renderDeliveryMetrics(destinations: readonly Figures[]): string {
  const out: string[] = [];
  const esc = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
  const labels = (d: Figures, extra: Record<string, string> = {}) =>
    `{${Object.entries({ stream: d.stream, destination: d.name, type: d.type, ...extra })
      .map(([k, v]) => `${k}="${esc(v)}"`)
      .join(",")}}`;
  const family = (name: string, type: string, help: string, value: (d: Figures) => number) =>
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...destinations.map((d) => `${name}${labels(d)} ${value(d)}`));
  family("edge_dedup_delivery_lag_ms", "gauge", "How long the oldest undelivered committed row has waited (0: caught up).", (d) => d.lagMs);
  family("edge_dedup_delivery_pending_rows", "gauge", "Rows read for delivery and not yet delivered.", (d) => d.pending);
  family("edge_dedup_delivery_failing", "gauge", "1 when a pending row has failed or the destination is paused.", (d) => (d.failing ? 1 : 0));
  family("edge_dedup_delivery_dead_rows", "gauge", "Rows in the destination's dead lane.", (d) => d.dead);
  family("edge_dedup_delivery_delivered_seq", "gauge", "Every row of every commit up to this seq is delivered or dead.", (d) => d.deliveredSeq);
  out.push("# HELP edge_dedup_deliveries_total Delivery attempts, by outcome.", "# TYPE edge_dedup_deliveries_total counter");
  for (const d of destinations) {
    out.push(
      `edge_dedup_deliveries_total${labels(d, { outcome: "delivered" })} ${d.delivered}`,
      `edge_dedup_deliveries_total${labels(d, { outcome: "failed" })} ${d.failures}`,
    );
  }
  return out.join("\n") + "\n";
}

import { barChart } from "../charts/bar-chart";
import { fill, h } from "../dom";
import { bytes, num } from "../format";
import type { PartitionState } from "../types";

/** The State panel: rows and bytes per partition. */
export function renderState(parts: PartitionState[]): void {
  const rows = parts.map((p) => ({ label: String(p.partition), value: p.rows }));
  const bs = parts.map((p) => ({ label: String(p.partition), value: p.bytes }));
  fill("state", [
    h("div", { class: "legend" }, ["Rows per partition"]),
    barChart(rows, { id: "state-rows", label: "state rows per partition", color: "#2f6fde", cls: "bar-rows", format: num }),
    h("div", { class: "legend" }, ["Bytes per partition"]),
    barChart(bs, { id: "state-bytes", label: "state bytes per partition", color: "#862e9c", cls: "bar-bytes", format: bytes }),
  ]);
}

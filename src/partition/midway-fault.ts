import { failAt, faultsEnabled, partitionFaultKey, takeFault } from "../instrument/faults";
import { rowColumns, rowsOf } from "../stream/row-columns";
import type { GroupApplyRequest } from "./protocol";

/**
 * Test builds only (src/instrument/faults.ts's plan): a partition call armed
 * "partition-midway" stores half of its first entry with `store`, then dies,
 * as an object that crashed part way through a micro-batch would.
 */
export function dieMidwayIfArmed(req: GroupApplyRequest, store: (half: GroupApplyRequest) => void): void {
  if (!faultsEnabled() || req.entries.length === 0) return;
  const fault = takeFault(partitionFaultKey(req.epoch, req.entries[0].batch));
  if (fault !== "partition-midway") return;
  const first = req.entries[0];
  const half = rowsOf(first.rows).slice(0, Math.ceil(first.rows.index.length / 2));
  store({ ...req, entries: [{ ...first, rows: rowColumns(half) }] });
  failAt(fault, "partition-midway");
}

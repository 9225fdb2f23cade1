import { armFault, failAt, faultsEnabled, partitionFaultKey, partitionStorageFaultKey, takeFault, type FaultPoint } from "../instrument/faults";
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

/**
 * Test builds only: a partition armed with `point` for its epoch dies there,
 * part way through a storage step (its transaction rolls back). Another
 * point armed stays armed.
 */
export function dieInStorageIfArmed(epoch: string, point: Extract<FaultPoint, "partition-seal-midway" | "partition-evict-midway">): void {
  if (!faultsEnabled()) return;
  const key = partitionStorageFaultKey(epoch);
  const armed = takeFault(key);
  if (armed !== null && armed !== point) armFault(key, armed);
  failAt(armed, point);
}

/**
 * Read-through during a rescale: a new partition's call carries its rows'
 * keys as the old partitions that still move hold them (their peek), and
 * keeps them before judging (src/partition/key-moves.ts), so that a key not
 * yet moved is judged as its old owner would have judged it.
 */
import type { MovedKey, PartitionRpc, RowColumns } from "../partition/protocol";
import { stateKeyFor, type DedupSettings } from "../stream/dedup";
import { ownerOf } from "../stream/partition-map";
import { rowsOf } from "../stream/row-columns";
import type { RescaleState } from "./state";

/** The keys of these entries' rows held by old partitions not yet drained, each asked once per call. */
export async function inheritedKeys(
  rescale: RescaleState,
  old: (p: number) => DurableObjectStub<PartitionRpc>,
  epoch: string,
  entries: readonly { settings: DedupSettings; rows: RowColumns }[],
): Promise<MovedKey[]> {
  const byOld = new Map<number, Set<string>>();
  for (const e of entries)
    for (const r of rowsOf(e.rows)) {
      const p = ownerOf(r.key, { partitions: rescale.from.partitions });
      if (rescale.cursors[p]?.done) continue;
      (byOld.get(p) ?? byOld.set(p, new Set()).get(p)!).add(stateKeyFor(e.settings, r));
    }
  // Each named by the partition it came from: a new partition marks what it keeps (src/partition/inherited-marks.ts).
  const answers = await Promise.all([...byOld].map(async ([p, keys]) => (await old(p).peek(epoch, [...keys])).map((m) => ({ ...m, from: p }))));
  return answers.flat();
}

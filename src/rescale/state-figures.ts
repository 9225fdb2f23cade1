/**
 * The partitions' figures during a rescale (DESIGN §12), each key counted
 * once: a key can be in an old partition and a new one at once (read
 * through, or handed out before its bucket is forgotten at the old one).
 * The old partitions are asked first; each leaves out the keys its move has
 * handed out (their new owners hold them), and each new partition is then
 * told how far every old one has got and its watermark, and leaves out the
 * keys it read through that an old one still counts. Asked between two move
 * steps (the cursors are those of the keys handed out).
 */
import type { OldHolder, PartitionRpc, PartitionStats } from "../partition/protocol";
import { undrained, type RescaleState } from "./state";

type Stub = DurableObjectStub<PartitionRpc>;

/** Every new partition's figures, then every undrained old one's; `rows` counts each key once. */
export async function figuresDuringMove(
  r: RescaleState,
  epoch: string,
  partitions: number,
  old: (p: number) => Stub,
  next: (q: number) => Stub,
): Promise<PartitionStats[]> {
  const olds = undrained(r);
  const oldStats = await Promise.all(olds.map((p) => old(p).describe(epoch, { page: r.cursors[p].page ?? null })));
  const holders: Record<number, OldHolder> = {};
  olds.forEach((p, i) => void (holders[p] = { ...r.cursors[p], watermark: oldStats[i].watermark }));
  const newStats = await Promise.all(Array.from({ length: partitions }, (_, q) => next(q).describe(epoch, { olds: holders })));
  return [...newStats, ...oldStats].map(({ elsewhere, ...s }) => ({ ...s, rows: s.rows - (elsewhere ?? 0) }));
}

import type { BatchPlan } from "../stream/batch";
import { batchKey } from "../stream/batch-key";
import { rowColumns, type RowColumns } from "../stream/row-columns";

/**
 * A micro-batch's shape, with no I/O: each member (one request) is planned on
 * its own; the group sends every partition one payload with an entry per
 * member that has rows there, then hands each member its own decisions back,
 * and writes one object per lane with a byte range per member.
 */
export interface Member {
  /** `{source}\n{batchId}`: the member's decision ledger in each partition */
  ledger: string;
  plan: BatchPlan;
}

export interface PartitionEntry {
  batch: string;
  rows: RowColumns;
}

/** Per partition, an entry per member with rows there, in member order. */
export function partitionPayloads(members: readonly Member[]): Map<number, PartitionEntry[]> {
  const out = new Map<number, PartitionEntry[]>();
  for (const m of members) {
    for (const [p, rows] of m.plan.subBatches) {
      let entries = out.get(p);
      if (!entries) out.set(p, (entries = []));
      entries.push({ batch: m.ledger, rows: rowColumns(rows) });
    }
  }
  return out;
}

/**
 * Splits the partitions' answers (decision strings, or anything else they
 * answer per entry, in payload order) back into each member's partition → decisions map.
 */
export function memberDecisions<T = string>(members: readonly Member[], answers: ReadonlyMap<number, readonly T[]>): Map<number, T>[] {
  const cursor = new Map<number, number>();
  return members.map((m) => {
    const mine = new Map<number, T>();
    for (const p of m.plan.subBatches.keys()) {
      const at = cursor.get(p) ?? 0;
      const decided = answers.get(p)?.[at];
      if (decided === undefined) throw new Error(`partition ${p} returned no decisions for ${m.ledger}`);
      mine.set(p, decided);
      cursor.set(p, at + 1);
    }
    return mine;
  });
}

/**
 * The commit number of a kept copy's batch, for the conflicts and duplicates
 * lanes: a member of this group commits as `firstSeq` + its position (the
 * members commit together, in order, with consecutive numbers); any other
 * batch, as the ledger knows it (null: not committed, or forgotten). Without
 * `firstSeq` (a caller that cannot know it) a member's is null.
 */
export function keptSeqOf(
  members: readonly Pick<Member, "ledger">[],
  firstSeq: number | undefined,
  committedSeq: (source: string, batchId: string) => number | null,
): (source: string, batchId: string) => number | null {
  const position = new Map(members.map((m, i) => [m.ledger, i]));
  return (source, batchId) => {
    const i = position.get(batchKey(source, batchId));
    if (i !== undefined) return firstSeq === undefined ? null : firstSeq + i;
    return committedSeq(source, batchId);
  };
}

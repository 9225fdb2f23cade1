/**
 * More or fewer ingest shards on a live stream (DESIGN §12): which shard
 * judges a batch id while the count of shards taking batches goes from
 * `from` to `to`, and after (`shards` below: that count, config.intakeShards
 * or config.shards). Pure.
 *
 * - preparing: every shard taking batches has been told; the count is
 *   still `from`. A shard judges only the batches that stay with it under
 *   both counts; it still answers the batches it knows (a retry replays, a
 *   reused id is a 422) but refuses to begin one that moves (a 503: retry
 *   shortly).
 * - done: the count is `to`. A batch's owner is its shard under `to`;
 *   until `until` (the idempotency window), a batch that lay with another
 *   shard under `from` is first asked of that shard (`consult`): if it knows
 *   the id, its answer stands (replay, 422, in flight); else the new owner
 *   judges it. No old shard begins a moved id after the prepare, so of the
 *   two shards exactly one ever judges it.
 * - a change within the window of earlier ones keeps them (`earlier`, newest
 *   first): a moved id is asked of its shard under each count it has had
 *   within its window, newest first, until one knows it. Each of those
 *   shards judged only ids it owned, and asked the shards before it, so the
 *   first that knows the id is the one that judged it.
 */
import { shardFor } from "./shards";

export interface ShardChange {
  from: number;
  to: number;
  phase: "preparing" | "done";
  /** done: moved ids are asked of their old shard until then (ms) */
  until: number;
  /** the changes before this one whose windows had not ended when it began: the count before each and its window's end, newest first */
  earlier?: { from: number; until: number }[];
}

/** At most this many changes of the shard count within one idempotency window (each adds a shard a moved id may be asked of). */
export const MAX_CHANGES_PER_WINDOW = 4;

export type Ownership = { kind: "mine" } | { kind: "moved" } | { kind: "known-only" } | { kind: "consult"; shards: number[] };

/** The changes whose windows have not ended at `now`, this one included once done, newest first: the one a change begun now keeps as `earlier`. */
export function openChanges(change: ShardChange | null, now: number): { from: number; until: number }[] {
  if (!change) return [];
  const mine = change.phase === "done" && now < change.until ? [{ from: change.from, until: change.until }] : [];
  return [...mine, ...(change.earlier ?? []).filter((e) => now < e.until)];
}

export function ownership(batchId: string, shard: number, shards: number, change: ShardChange | null, now: number): Ownership {
  if (change?.phase === "preparing") {
    const before = shardFor(batchId, change.from);
    if (before !== shard) return { kind: "moved" };
    if (before !== shardFor(batchId, change.to)) return { kind: "known-only" };
  } else if (shardFor(batchId, shards) !== shard) return { kind: "moved" };
  const earlier = shardsHolding(batchId, shards, change, now).filter((k) => k !== shard);
  return earlier.length > 0 ? { kind: "consult", shards: earlier } : { kind: "mine" };
}

/**
 * Every shard that may hold a batch id's record at `now`: its shard under
 * the count in force (`shards`: the count taking batches, the old one while
 * a change prepares), then its shard under each earlier count within that change's
 * window, newest first, each once. A receipt's commit number is asked of
 * them in turn; a moved id, of the earlier ones.
 */
export function shardsHolding(batchId: string, shards: number, change: ShardChange | null, now: number): number[] {
  const out = [shardFor(batchId, shards)];
  const changes = change?.phase === "preparing" ? (change.earlier ?? []).filter((c) => now < c.until) : openChanges(change, now);
  for (const c of changes) {
    const k = shardFor(batchId, c.from);
    if (!out.includes(k)) out.push(k);
  }
  return out;
}

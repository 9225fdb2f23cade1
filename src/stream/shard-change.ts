/**
 * More ingest shards on a live stream (DESIGN §12): which shard judges a
 * batch id while its count goes from `from` to `to`, and after. Pure.
 *
 * - preparing: every old shard has been told; config.shards is still `from`.
 *   A shard judges only the batches that stay with it under both counts; it
 *   still answers the batches it knows (a retry replays, a reused id is a
 *   422) but refuses to begin one that moves (`moving`: retry shortly).
 * - done: config.shards is `to`. A batch's owner is its shard under `to`;
 *   until `until` (the idempotency window), a batch that lay with another
 *   shard under `from` is first asked of that shard (`consult`): if it knows
 *   the id, its answer stands (replay, 422, in flight); else the new owner
 *   judges it. No old shard begins a moved id after the prepare, so of the
 *   two shards exactly one ever judges it.
 */
import { shardFor } from "./shards";

export interface ShardChange {
  from: number;
  to: number;
  phase: "preparing" | "done";
  /** done: moved ids are asked of their old shard until then (ms) */
  until: number;
}

export type Ownership = { kind: "mine" } | { kind: "moved" } | { kind: "known-only" } | { kind: "consult"; shard: number };

export function ownership(batchId: string, shard: number, shards: number, change: ShardChange | null, now: number): Ownership {
  if (change?.phase === "preparing") {
    const before = shardFor(batchId, change.from);
    if (before !== shard) return { kind: "moved" };
    return before === shardFor(batchId, change.to) ? { kind: "mine" } : { kind: "known-only" };
  }
  if (shardFor(batchId, shards) !== shard) return { kind: "moved" };
  if (change && now < change.until) {
    const before = shardFor(batchId, change.from);
    if (before !== shard) return { kind: "consult", shard: before };
  }
  return { kind: "mine" };
}

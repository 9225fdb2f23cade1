/**
 * More ingest shards on a live stream (DESIGN §12), as shard 0 runs it
 * (the rule of who judges a batch id is src/stream/shard-change.ts):
 *  1. prepare: every old shard judges only the batch ids that stay with it
 *     (a moved one it knows is still answered; a new one waits);
 *  2. the new shards are made, on the new count, with the stream's
 *     credentials, and each old shard takes the new count, shard 0 last (reads
 *     and admissions follow its count, so no sender routes to a shard before
 *     it exists); a moved id is asked of its old shard for the idempotency
 *     window, so a retry replays and a reused id is still a 422;
 *  3. the clock learns the count.
 * Every step can be taken again: a PATCH cut short (its moved ids answered
 * "retry") finishes when sent again. Shards only grow here, at most
 * MAX_CHANGES_PER_WINDOW times within an idempotency window (a moved id is
 * asked of its shard under each count it had within the window).
 */
import { clockStub, coordinatorStub, type Env } from "../env";
import { idempotencyWindowOf } from "../stream/config";
import { MAX_CHANGES_PER_WINDOW, openChanges, type ShardChange } from "../stream/shard-change";
import { MAX_SHARDS, shardsOf } from "../stream/shards";
import { LEASE_MS } from "./intake";
import type { RescaleAnswer } from "./protocol";
import type { CoordinatorStores } from "./stores";

export class ShardGrowth {
  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
  ) {}

  async grow(to: number): Promise<RescaleAnswer> {
    const meta = this.s.meta();
    if (!meta) return { kind: "missing" };
    const from = shardsOf(meta.config);
    const pending = meta.shardChange?.phase === "preparing" ? meta.shardChange : null;
    if (pending && pending.to !== to)
      return { kind: "refused", status: 409, slug: "rescale-under-way", detail: `a change to ${pending.to} shards is under way: send it again to finish it` };
    if (!pending) {
      if (!Number.isInteger(to) || to < 1 || to > MAX_SHARDS)
        return { kind: "refused", status: 400, slug: "same-partitions", detail: `shards must be an integer from 1 to ${MAX_SHARDS}` };
      if (to === from) return { kind: "refused", status: 400, slug: "same-partitions", detail: `the stream has ${to} shard(s) already` };
      if (to < from)
        return {
          kind: "refused",
          status: 409,
          slug: "rescale-not-supported",
          detail: `a live stream's shards only grow (${from} → ${to} asked): each shard's output and remembered batch ids stay where they are`,
        };
      if (meta.rescale) return { kind: "refused", status: 409, slug: "rescale-under-way", detail: `a rescale to ${meta.rescale.to} partitions is under way` };
      // Each change within the window adds a shard a moved id may be asked of, on its path: a few at most.
      const open = openChanges(meta.shardChange, Date.now());
      if (open.length >= MAX_CHANGES_PER_WINDOW)
        return {
          kind: "refused",
          status: 409,
          slug: "rescale-under-way",
          detail: `${open.length} changes of the shard count are remembered within the idempotency window (at most ${MAX_CHANGES_PER_WINDOW}); the oldest until ${new Date(Math.min(...open.map((c) => c.until))).toISOString()}: grow again after it`,
        };
    }
    const earlier = pending ? (pending.earlier ?? []) : openChanges(meta.shardChange, Date.now());
    const preparing: ShardChange = { from: pending?.from ?? from, to, phase: "preparing", until: 0, ...(earlier.length > 0 ? { earlier } : {}) };
    const shard = (index: number) => ({ index, epoch: meta.epoch, incarnation: meta.incarnation });
    const old = Array.from({ length: preparing.from - 1 }, (_, i) => i + 1);
    this.s.metaStore.setShardChange(preparing);
    this.s.forgetCaches();
    await Promise.all(old.map((k) => coordinatorStub(this.env, meta.name, k).configureShard(meta.name, meta.config, shard(k), preparing)));
    const config = { ...meta.config, shards: to };
    const done: ShardChange = { ...preparing, phase: "done", until: Date.now() + idempotencyWindowOf(config) + LEASE_MS };
    const credentials = this.s.credentials.all();
    for (let k = preparing.from; k < to; k++) {
      const stub = coordinatorStub(this.env, meta.name, k);
      await stub.configureShard(meta.name, config, shard(k), done);
      for (const c of credentials) await stub.addCredential(c); // "duplicate" once it has it
    }
    await Promise.all(old.map((k) => coordinatorStub(this.env, meta.name, k).configureShard(meta.name, config, shard(k), done)));
    this.s.metaStore.setShardChange(done, { config, version: meta.configVersion + 1 });
    this.s.forgetCaches();
    await clockStub(this.env, meta.name).configure(meta.name, { epoch: meta.epoch, incarnation: meta.incarnation }, meta.configVersion + 1, config);
    return { kind: "resharded", from: preparing.from, to };
  }
}

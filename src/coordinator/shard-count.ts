/**
 * More or fewer ingest shards on a live stream (DESIGN §12), as shard 0 runs
 * it (the rule of who judges a batch id is src/stream/shard-change.ts):
 *  1. prepare: every shard taking batches judges only the batch ids that stay
 *     with it (a moved one it knows is still answered; a new one waits);
 *  2. the shards that take batches under the new count are made (new ones,
 *     with the stream's credentials) or told first, then the others, shard 0
 *     last (reads and admissions follow its count, so no sender routes to a
 *     shard before it judges); a moved id is asked of its old shard for the
 *     idempotency window, so a retry replays and a reused id is still a 422;
 *  3. the clock learns the count.
 * Fewer shards keeps every shard: those past the new count take no batches
 * but keep their output, commits and remembered ids (`intakeShards` <
 * `shards`: reads, delivery and the clock still span them), and a later
 * change may take them up again. Every step can be taken again: a PATCH cut
 * short (its moved ids answered 503) finishes when sent again. At most
 * MAX_CHANGES_PER_WINDOW changes within an idempotency window (a moved id is
 * asked of its shard under each count it had within the window).
 */
import { clockStub, coordinatorStub, type Env } from "../env";
import { dieInShardChangeIfArmed } from "../instrument/faults";
import { idempotencyWindowOf, type StreamConfig } from "../stream/config";
import { MAX_CHANGES_PER_WINDOW, openChanges, type ShardChange } from "../stream/shard-change";
import { intakeShardsOf, MAX_SHARDS, shardsOf } from "../stream/shards";
import { LEASE_MS } from "./intake";
import type { Meta } from "./meta";
import type { RescaleAnswer } from "./protocol";
import type { CoordinatorStores } from "./stores";

type Refusal = Extract<RescaleAnswer, { kind: "refused" }>;

export class ShardCount {
  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
  ) {}

  async change(to: number): Promise<RescaleAnswer> {
    const meta = this.s.meta();
    if (!meta) return { kind: "missing" };
    const pending = meta.shardChange?.phase === "preparing" ? meta.shardChange : null;
    const refused = pending
      ? pending.to === to
        ? null
        : underWay(`a change to ${pending.to} shards is under way: send it again to finish it`)
      : this.refusal(meta, to);
    if (refused) return refused;
    const earlier = pending ? (pending.earlier ?? []) : openChanges(meta.shardChange, Date.now());
    const from = pending?.from ?? intakeShardsOf(meta.config);
    const preparing: ShardChange = { from, to, phase: "preparing", until: 0, ...(earlier.length > 0 ? { earlier } : {}) };
    const shard = (index: number) => ({ index, epoch: meta.epoch, incarnation: meta.incarnation });
    const range = (a: number, b: number) => Array.from({ length: Math.max(0, b - a) }, (_, i) => a + i);
    this.s.metaStore.setShardChange(preparing);
    this.s.forgetCaches();
    await Promise.all(range(1, from).map((k) => coordinatorStub(this.env, meta.name, k).configureShard(meta.name, meta.config, shard(k), preparing)));
    dieInShardChangeIfArmed(meta.name, "shards-prepared"); // test builds only
    const span = shardsOf(meta.config);
    const config = countsOf(meta.config, Math.max(span, to), to);
    const done: ShardChange = { ...preparing, phase: "done", until: Date.now() + idempotencyWindowOf(config) + LEASE_MS };
    const made = range(span, to).map((k) => coordinatorStub(this.env, meta.name, k));
    for (const [i, stub] of made.entries()) await stub.configureShard(meta.name, config, shard(span + i), done);
    // Read once every new shard exists: a credential added or deleted after this reaches them too (the fan-out spans `to` while this prepares: ./other-shards.ts).
    const credentials = this.s.credentials.all();
    for (const stub of made) for (const c of credentials) await stub.addCredential(c); // "duplicate" once it has it
    dieInShardChangeIfArmed(meta.name, "shards-made");
    // Those that judge under the new count first, then those that stop.
    const told = (ks: number[]) => Promise.all(ks.map((k) => coordinatorStub(this.env, meta.name, k).configureShard(meta.name, config, shard(k), done)));
    await told(range(1, Math.min(span, to)));
    await told(range(Math.max(1, to), span));
    dieInShardChangeIfArmed(meta.name, "shards-told");
    this.s.metaStore.setShardChange(done, { config, version: meta.configVersion + 1 });
    this.s.forgetCaches();
    await clockStub(this.env, meta.name).configure(meta.name, { epoch: meta.epoch, incarnation: meta.incarnation }, meta.configVersion + 1, config);
    return { kind: "resharded", from, to };
  }

  private refusal(meta: Meta, to: number): Refusal | null {
    if (!Number.isInteger(to) || to < 1 || to > MAX_SHARDS)
      return { kind: "refused", status: 400, slug: "same-partitions", detail: `shards must be an integer from 1 to ${MAX_SHARDS}` };
    if (to === intakeShardsOf(meta.config))
      return { kind: "refused", status: 400, slug: "same-partitions", detail: `the stream has ${to} shard(s) taking batches already` };
    if (meta.rescale) return underWay(`a rescale to ${meta.rescale.to} partitions is under way`);
    // Each change within the window adds a shard a moved id may be asked of, on its path: a few at most.
    const open = openChanges(meta.shardChange, Date.now());
    if (open.length < MAX_CHANGES_PER_WINDOW) return null;
    const oldest = new Date(Math.min(...open.map((c) => c.until))).toISOString();
    return underWay(
      `${open.length} changes of the shard count are remembered within the idempotency window (at most ${MAX_CHANGES_PER_WINDOW}); the oldest until ${oldest}: change again after it`,
    );
  }
}

const underWay = (detail: string): Refusal => ({ kind: "refused", status: 409, slug: "rescale-under-way", detail });

/** The config with `span` shards of which the first `intake` take batches. */
function countsOf(config: StreamConfig, span: number, intake: number): StreamConfig {
  const { intakeShards: _, ...rest } = config;
  return { ...rest, shards: span, ...(intake < span ? { intakeShards: intake } : {}) };
}

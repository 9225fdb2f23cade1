import { canonicalJson } from "../lib/jcs";
import { clockStub, destinationIndex, partitionStub, registryStub, type Env } from "../env";
import { deleteStreamObjects } from "../output/sink";
import { boundFieldChanges } from "../stream/bound-fields";
import type { StreamConfig } from "../stream/config";
import type { ShardChange } from "../stream/shard-change";
import { intakeShardsOf, isSharded, shardsOf } from "../stream/shards";
import { otherShards } from "./other-shards";
import { globalWatermark } from "../stream/watermark";
import type { ConfigureResult } from "./protocol";
import type { CoordinatorStores } from "./stores";
import type { Upkeep } from "./upkeep";

/** What the object itself does when a stream comes and goes: its storage made, and everything in memory let go. */
export interface ObjectHooks {
  /** creates the tables (an admin created the stream) */
  createStorage(): void;
  /** the tables are gone: requests name a stream that does not exist until it is created anew */
  storageDeleted(): void;
  /** batches in flight and queued are forgotten (their requests fail and are retried) */
  forgetInflight(): void;
  deleteAll(): Promise<void>;
}

/** A stream created, its config changed, and the stream deleted with everything it owns. */
export class Lifecycle {
  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
    private readonly upkeep: Upkeep,
    private readonly hooks: ObjectHooks,
  ) {}

  /** The stream created or its config changed (shard 0: the route's call); its other shards, and its clock, follow. */
  async configure(name: string, config: StreamConfig): Promise<ConfigureResult> {
    const r = await this.configureHere(name, config);
    const meta = this.s.meta();
    if (r.status !== "conflict" && meta && isSharded(meta.config)) {
      // Every PUT reaches every shard: one that a failed PUT left behind is brought level by the retry.
      const shard = (index: number) => ({ index, epoch: meta.epoch, incarnation: meta.incarnation });
      await Promise.all(otherShards(this.env, meta).map((stub, i) => stub.configureShard(name, meta.config, shard(i + 1))));
      await clockStub(this.env, name).configure(name, { epoch: meta.epoch, incarnation: meta.incarnation }, meta.configVersion, meta.config);
    }
    return r;
  }

  /** Shard k > 0 of a stream, as its shard 0 creates or updates it: the stream's epoch and incarnation, its own commit numbers. */
  async configureShard(
    name: string,
    config: StreamConfig,
    shard: { index: number; epoch: string; incarnation: number },
    change?: ShardChange,
  ): Promise<ConfigureResult> {
    const meta = this.s.meta();
    if (meta && meta.epoch !== shard.epoch) await this.dropShard(); // left by a deleted incarnation of the stream
    if (!this.s.meta()) {
      this.hooks.createStorage();
      this.s.metaStore.create(name, config, Date.now(), shard.incarnation, { index: shard.index, epoch: shard.epoch });
      if (change) this.s.metaStore.setShardChange(change); // a new shard asks moved ids of their old shards from its first batch
      this.s.forgetCaches();
      return { status: "created", config };
    }
    if (change) {
      // A shard-count change (./shard-count.ts): its phase, and the new counts once done.
      const now = this.s.meta()!;
      const same = shardsOf(config) === shardsOf(now.config) && intakeShardsOf(config) === intakeShardsOf(now.config);
      this.s.metaStore.setShardChange(change, same ? undefined : { config, version: now.configVersion + 1 });
      this.s.forgetCaches();
      return { status: "updated", config };
    }
    return this.configureHere(name, config);
  }

  private async configureHere(name: string, config: StreamConfig): Promise<ConfigureResult> {
    const meta = this.s.meta();
    if (!meta) {
      // The Registry counts creations of a name across deletes: a re-created stream's webhook-ids differ from the last one's.
      const incarnation = await registryStub(this.env).claimIncarnation(name);
      if (this.s.meta()) return this.configure(name, config); // created while we asked: this PUT updates it (the number is left unused)
      this.hooks.createStorage();
      this.s.metaStore.create(name, config, Date.now(), incarnation);
      this.s.forgetCaches();
      return { status: "created", config };
    }
    // How many shards take batches is PATCH's to set (./shard-count.ts): a PUT keeps it.
    if (meta.config.intakeShards !== undefined && shardsOf(config) === shardsOf(meta.config)) config = { ...config, intakeShards: meta.config.intakeShards };
    const changed = boundFieldChanges(meta.config, config);
    if (changed.length > 0) return { status: "conflict", changed, config: meta.config };
    // Compared by content, not member order (a config a PATCH rewrote keeps its own order).
    if (canonicalJson(meta.config) === canonicalJson(config)) return { status: "unchanged", config: meta.config };
    // A new delay or new declared sources can move the watermark (never back); with several shards the clock moves it.
    const watermark = isSharded(config) ? meta.watermark : globalWatermark(config, this.s.sourceProgress(), meta.watermark, Date.now());
    this.s.metaStore.update(config, meta.configVersion + 1, watermark);
    this.s.forgetCaches();
    await this.upkeep.evictionIfDue(config, meta.watermark, watermark);
    return { status: "updated", config };
  }

  /**
   * Deletes the stream: its destinations (their pending rows, dead lanes and
   * secrets), partitions' state, the output in R2, then the ledger and config.
   * The Registry hears first that this incarnation ends, so a crash part way
   * leaves a stream a retried DELETE finishes, and a re-creation never reuses its ids.
   */
  async drop(): Promise<boolean> {
    const meta = this.s.meta();
    if (!meta) return false;
    await registryStub(this.env).retireIncarnation(meta.name, meta.incarnation);
    await destinationIndex(this.env, meta.name).removeMembers(meta.name);
    await Promise.all(Array.from({ length: meta.config.partitions }, (_, p) => partitionStub(this.env, meta.name, p, meta.mapVersion).drop()));
    // A rescale under way: the old map's partitions go too.
    const old = meta.rescale?.from;
    if (old) await Promise.all(Array.from({ length: old.partitions }, (_, p) => partitionStub(this.env, meta.name, p, old.version).drop()));
    await deleteStreamObjects(this.env.SINK, meta.name);
    if (isSharded(meta.config)) {
      await Promise.all(otherShards(this.env, meta).map((stub) => stub.dropShard()));
      await clockStub(this.env, meta.name).drop();
    }
    await this.dropShard();
    return true;
  }

  /** This shard's own storage goes (shard 0's drop() has let go of everything the stream owns elsewhere). */
  async dropShard(): Promise<void> {
    if (!this.s.meta()) return;
    await this.s.alarms.cancel();
    this.s.observer.flush(); // the last commits' line, before the stream is gone
    await this.hooks.deleteAll();
    this.s.forgetCaches();
    this.s.forgetUnstored();
    this.s.partitions.forgetAll(); // ledgers of the old incarnation: the new one's partitions never held them
    this.s.clockWatermark = 0;
    this.hooks.storageDeleted();
    this.hooks.forgetInflight();
  }
}

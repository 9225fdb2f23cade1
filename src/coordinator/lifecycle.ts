import { destinationIndex, partitionStub, registryStub, type Env } from "../env";
import { deleteStreamObjects } from "../output/sink";
import { boundFieldChanges } from "../stream/bound-fields";
import type { StreamConfig } from "../stream/config";
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

  async configure(name: string, config: StreamConfig): Promise<ConfigureResult> {
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
    const changed = boundFieldChanges(meta.config, config);
    if (changed.length > 0) return { status: "conflict", changed, config: meta.config };
    if (JSON.stringify(meta.config) === JSON.stringify(config)) return { status: "unchanged", config };
    // A new delay or new declared sources can move the watermark (never back).
    const watermark = globalWatermark(config, this.s.sourceProgress(), meta.watermark, Date.now());
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
    await Promise.all(Array.from({ length: meta.config.partitions }, (_, p) => partitionStub(this.env, meta.name, p).drop()));
    await deleteStreamObjects(this.env.SINK, meta.name);
    await this.s.alarms.cancel();
    this.s.observer.flush(); // the last commits' line, before the stream is gone
    await this.hooks.deleteAll();
    this.s.forgetCaches();
    this.s.forgetUnstored();
    this.s.partitions.forgetAll(); // ledgers of the old incarnation: the new one's partitions never held them
    this.hooks.storageDeleted();
    this.hooks.forgetInflight();
    return true;
  }
}

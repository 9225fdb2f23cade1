/**
 * An online rescale of a stream's partitions, as the Coordinator runs it
 * (DESIGN §12; the steps are src/rescale/): the switch between two
 * micro-batches (the old partitions' pending decisions handed to their
 * successors, then the new map in force: a new config version with the new
 * count, a new map version whose partitions are objects of their own), and
 * the move on the alarm, a page of keys per old partition per step, its
 * cursors kept in meta. While it runs, each micro-batch's calls carry their
 * rows' keys as the undrained old partitions hold them (read-through). An
 * old partition is drained once it has handed out every bucket (text keys)
 * or holds no key (hashed keys, which can't be routed anew: they expire);
 * when all are, they are dropped and the rescale ends.
 *
 * Several ingest shards: shard 0 runs the rescale. Its switch first fences
 * every old partition (src/partition/fence.ts), so no shard adds a decision
 * there after the handover; a shard still routing by the old map is told by
 * the first fenced partition it calls, asks shard 0 for the map in force
 * (switchedMap), takes it and runs its micro-batch again. A switch cut short
 * by a crash after the fences is completed by whoever meets a fence first,
 * on shard 0 (the fence names the new map). Before the end drops the old
 * partitions, every shard takes the map without the rescale (adopt), so none
 * reads through them after.
 */
import { coordinatorStub, partitionStub, type Env } from "../env";
import { handOverDecisions, moveBuckets, START, type MoveSides } from "../rescale/mover";
import { otherShards } from "./other-shards";
import { undrained, type RescaleState } from "../rescale/state";
import { dedupSettings } from "../stream/batch";
import type { Meta } from "./meta";
import type { MapVersion, RescaleAnswer, ShardMap } from "./protocol";
import type { CoordinatorStores } from "./stores";

/**
 * Keys each undrained old partition moves per alarm step, one partition
 * after another: a page holds each object it calls for a few tens of
 * milliseconds at most, and the micro-batches waiting run between steps.
 */
export const PAGE_KEYS = 250;
/**
 * The next move step at least this long after one (ms); hashed keys wait to
 * expire, so their partitions are only looked at now and then.
 */
export const NEXT_STEP_MS = { text: 150, hashed: 30_000 };
/**
 * And at least this many times the step's own duration: the move takes at
 * most a third of the time of the objects it calls, whatever a page costs
 * (a fixed 150 ms kept webhook16 at 0.55× its rate with 10,000 keys per
 * partition but 0.32× with 100,000; `npm run bench`'s rescale8to16).
 */
export const IDLE_PER_BUSY = 2;

export class Rescaling {
  /** the move step running, if one is (steps run one at a time; the state figures wait for it) */
  private stepping: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
    /** runs work between two micro-batches (MicroBatcher.exclusive) */
    private readonly between: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {}

  /** Starts a move to `target` partitions: refused while one runs, for hashed keys that never expire, or for the same count. */
  async start(target: number): Promise<RescaleAnswer> {
    return this.between(async () => {
      const meta = this.s.meta();
      if (!meta) return { kind: "missing" };
      if (meta.rescale) return { kind: "refused", status: 409, slug: "rescale-under-way", detail: `a rescale to ${meta.rescale.to} partitions is under way` };
      if (meta.config.stateKeys === "hashed" && meta.config.mode === "global")
        return {
          kind: "refused",
          status: 409,
          slug: "rescale-not-supported",
          detail: "hashed keys that never expire can't be moved: a hash can't be routed anew",
        };
      if (target === meta.config.partitions)
        return { kind: "refused", status: 400, slug: "same-partitions", detail: `the stream has ${target} partitions already` };
      const to = { version: meta.mapVersion + 1, partitions: target };
      // No shard decides anything at an old partition after this: the handover below then holds every pending decision.
      await Promise.all(Array.from({ length: meta.config.partitions }, (_, p) => partitionStub(this.env, meta.name, p, meta.mapVersion).fence(meta.epoch, to)));
      return { kind: "started", rescale: await this.completeSwitch(to) };
    });
  }

  /**
   * The switch to `to` once every old partition is fenced: their pending
   * decisions handed to their successors, then the new map in force here. A
   * no-op when it is already (or a later one is). Inside a micro-batch run or
   * between two (never beside one).
   */
  async completeSwitch(to: MapVersion): Promise<RescaleState> {
    const meta = this.s.meta();
    if (!meta) throw new Error("stream was deleted during its rescale");
    if (meta.mapVersion >= to.version) return meta.rescale!;
    const from = { version: meta.mapVersion, partitions: meta.config.partitions };
    await handOverDecisions(this.sides(meta, from, to.partitions, to.version));
    const rescale: RescaleState = {
      from,
      to: to.partitions,
      startedAt: Date.now(),
      keysMoved: 0,
      cursors: Array.from({ length: from.partitions }, () => START),
    };
    this.s.metaStore.setRescale(rescale, { config: { ...meta.config, partitions: to.partitions }, version: meta.configVersion + 1, mapVersion: to.version });
    this.s.forgetCaches();
    this.forgetFigures(from.partitions);
    await this.s.alarms.by(Date.now());
    return rescale;
  }

  /** Shard 0, asked by a fenced shard: the map in force once the switch to `to` is complete (it is by now, unless a crash cut it short). */
  async switchedMap(epoch: string, to: MapVersion): Promise<ShardMap | null> {
    return this.between(async () => {
      const meta = this.s.meta();
      if (!meta || meta.epoch !== epoch) return null;
      if (meta.mapVersion < to.version) await this.completeSwitch(to);
      const now = this.s.meta()!;
      return { config: now.config, mapVersion: now.mapVersion, rescale: now.rescale };
    });
  }

  /**
   * A map from shard 0, taken here if it is newer (a later version, or the
   * same one with its rescale over). Between micro-batches, or inside the run
   * that met a fence.
   */
  adopt(epoch: string, map: ShardMap): void {
    const meta = this.s.meta();
    if (!meta || meta.epoch !== epoch) return;
    const ended = map.mapVersion === meta.mapVersion && meta.rescale !== null && map.rescale === null;
    if (map.mapVersion < meta.mapVersion || (map.mapVersion === meta.mapVersion && !ended)) return;
    if (ended) this.s.metaStore.setRescale(null);
    else {
      this.s.metaStore.setRescale(map.rescale, { config: map.config, version: meta.configVersion + 1, mapVersion: map.mapVersion });
      this.forgetFigures(meta.config.partitions);
    }
    this.s.forgetCaches();
  }

  /** Where a micro-batch that met a fence gets the map in force: shard 0 completes the switch itself, shard k asks shard 0. */
  async refresh(to: MapVersion): Promise<void> {
    const meta = this.s.meta();
    if (!meta) return;
    if (meta.shard === 0) {
      await this.completeSwitch(to);
      return;
    }
    const map = await coordinatorStub(this.env, meta.name).switchedMap(meta.epoch, to);
    if (map) this.adopt(meta.epoch, map);
  }

  /** One step of the move (the alarm's): a few buckets of each undrained old partition; how long until the next (null: the move is done). */
  step(): Promise<number | null> {
    const run = this.stepping.then(() => this.stepOnce());
    this.stepping = run.catch(() => undefined);
    return run;
  }

  /** Resolves once no step runs: the state figures read the cursors of what has been handed out (src/rescale/state-figures.ts). */
  async stepsSettled(): Promise<void> {
    await this.stepping;
  }

  private async stepOnce(): Promise<number | null> {
    const meta = this.s.meta();
    if (!meta?.rescale) return null;
    const r = meta.rescale;
    const sides = this.sides(meta, r.from, r.to, meta.mapVersion);
    const hashed = meta.config.stateKeys === "hashed";
    const cursors = [...r.cursors];
    const began = Date.now();
    let moved = 0;
    for (const p of undrained(r)) {
      if (hashed) {
        // Hashed keys can't be routed anew: the old partition is read through until its keys have expired.
        const { rows } = await sides.old(p).advance(meta.epoch, meta.watermark);
        if (rows === 0) cursors[p] = { after: null, done: true };
        continue;
      }
      cursors[p] = await moveBuckets(
        sides,
        p,
        meta.watermark,
        cursors[p],
        1,
        (_cursor, taken) => {
          moved += taken;
        },
        PAGE_KEYS,
      );
    }
    const now = this.s.meta();
    if (!now?.rescale || now.epoch !== meta.epoch) return null; // deleted meanwhile
    const next: RescaleState = { ...now.rescale, keysMoved: now.rescale.keysMoved + moved, cursors };
    if (undrained(next).length > 0) {
      this.s.metaStore.setRescale(next);
      return hashed ? NEXT_STEP_MS.hashed : Math.max(NEXT_STEP_MS.text, Math.round((Date.now() - began) * IDLE_PER_BUSY));
    }
    // Every old partition is drained: every shard stops reading through them, they go, and the rescale ends.
    const ended: ShardMap = { config: meta.config, mapVersion: meta.mapVersion, rescale: null };
    await Promise.all(otherShards(this.env, meta).map((stub) => stub.adoptMap(meta.epoch, ended)));
    const figures = await Promise.all(Array.from({ length: r.to }, async (_, q) => ({ p: q, ...(await sides.next(q).endMove(meta.epoch)) })));
    await Promise.all(Array.from({ length: r.from.partitions }, (_, p) => sides.old(p).drop()));
    this.s.metaStore.setRescale(null);
    // The new partitions' figures as the move left them: those reported since the switch miss what moved in (takeIn reports to no book).
    this.s.partitions.record(figures);
    return null;
  }

  /** The old map's partition figures go: the new map's partitions report their own from their first call. */
  private forgetFigures(partitions: number): void {
    this.s.partitions.record(Array.from({ length: partitions }, (_, p) => ({ p, rows: 0, bytes: 0, watermark: 0, nextExpiry: null })));
  }

  private sides(meta: Meta, from: { version: number; partitions: number }, to: number, toVersion: number): MoveSides {
    return {
      epoch: meta.epoch,
      settings: dedupSettings(meta.config),
      from: from.partitions,
      to,
      old: (p) => partitionStub(this.env, meta.name, p, from.version),
      next: (q) => partitionStub(this.env, meta.name, q, toVersion),
    };
  }
}

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
 */
import { partitionStub, type Env } from "../env";
import { handOverDecisions, moveBuckets, START, type MoveSides } from "../rescale/mover";
import { undrained, type RescaleState } from "../rescale/state";
import { dedupSettings } from "../stream/batch";
import type { Meta } from "./meta";
import type { RescaleAnswer } from "./protocol";
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
  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
    /** runs work between two micro-batches (MicroBatcher.exclusive) */
    private readonly between: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {}

  /** Starts a move to `target` partitions: refused while one runs, for several shards, or for the same count. */
  async start(target: number): Promise<RescaleAnswer> {
    return this.between(async () => {
      const meta = this.s.meta();
      if (!meta) return { kind: "missing" };
      if (meta.rescale) return { kind: "refused", status: 409, slug: "rescale-under-way", detail: `a rescale to ${meta.rescale.to} partitions is under way` };
      if ((meta.config.shards ?? 1) > 1)
        return { kind: "refused", status: 409, slug: "rescale-not-supported", detail: "a stream of several ingest shards can't be rescaled yet" };
      if (meta.config.stateKeys === "hashed" && meta.config.mode === "global")
        return {
          kind: "refused",
          status: 409,
          slug: "rescale-not-supported",
          detail: "hashed keys that never expire can't be moved: a hash can't be routed anew",
        };
      if (target === meta.config.partitions)
        return { kind: "refused", status: 400, slug: "same-partitions", detail: `the stream has ${target} partitions already` };
      const from = { version: meta.mapVersion, partitions: meta.config.partitions };
      await handOverDecisions(this.sides(meta, from, target, meta.mapVersion + 1));
      const rescale: RescaleState = { from, to: target, startedAt: Date.now(), keysMoved: 0, cursors: Array.from({ length: from.partitions }, () => START) };
      this.s.metaStore.setRescale(rescale, {
        config: { ...meta.config, partitions: target },
        version: meta.configVersion + 1,
        mapVersion: meta.mapVersion + 1,
      });
      this.s.forgetCaches();
      // The figures were the old partitions': the new ones report their own from their first call.
      this.s.partitions.record(Array.from({ length: from.partitions }, (_, p) => ({ p, rows: 0, bytes: 0, watermark: 0, nextExpiry: null })));
      await this.s.alarms.by(Date.now());
      return { kind: "started", rescale };
    });
  }

  /** One step of the move (the alarm's): a few buckets of each undrained old partition; how long until the next (null: the move is done). */
  async step(): Promise<number | null> {
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
    // Every old partition is drained: they go, and the rescale ends.
    await Promise.all(Array.from({ length: r.from.partitions }, (_, p) => sides.old(p).drop()));
    this.s.metaStore.setRescale(null);
    return null;
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

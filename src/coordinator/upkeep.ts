import { partitionStub, type Env } from "../env";
import { pokeDestinations } from "../delivery/poke";
import { PublishGuard, publishManifest, publishTable, type PublishContext } from "../output/publisher";
import { LEDGER_RETENTION_MS } from "../partition/protocol";
import { idempotencyWindowOf, type StreamConfig } from "../stream/config";
import { globalWatermark, hasIdleTimeout } from "../stream/watermark";
import { recordColumns } from "../table/known-columns";
import { Alarms } from "./alarms";
import type { Meta } from "./meta";
import type { ClockLink } from "./clock-link";
import { isSharded } from "../stream/shards";
import type { CoordinatorStores } from "./stores";
import { PRUNE_STEP_GROUPS, pruneStep } from "./window";

/**
 * What the Coordinator does between requests, on its one alarm: flush the
 * outbox, publish the manifest and the table, push the watermark to the
 * partitions with keys due (eviction), forget ledger entries past the
 * idempotency window, let idle sources go.
 */
export class Upkeep {
  constructor(
    private readonly s: CoordinatorStores,
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly clock: ClockLink,
    /** a rescale's next move step (./rescaling.ts): ms until the one after (null: the move is done) */
    private readonly moveStep: () => Promise<number | null> = async () => null,
  ) {}

  /**
   * The one alarm's jobs. Outbox: flush when it holds FLUSH_BYTES or its
   * oldest entry is FLUSH_AFTER_MS old. Prompt eviction: push the global
   * watermark to every partition that has a key due to expire under it.
   */
  async alarm(): Promise<void> {
    const { alarms, outbox, ledger, metaStore } = this.s;
    alarms.fired();
    const meta = await this.refreshIdle();
    if (!meta) return;
    if (Alarms.flushDue(outbox.pending(), Date.now())) await this.flushChunk(meta);
    await this.publish(meta); // never throws: a failing publication backs off (src/output/publisher.ts)
    pokeDestinations(this.ctx, this.env, meta.name, () => ledger.lastSeq(), meta.shard); // a poke lost to a crash after its commit
    if (meta.config.mode !== "global") await this.evictDue(meta);
    // Shard 0 moves the keys; another shard only routes by the rescale's maps (./rescaling.ts).
    const nextStep = meta.rescale && meta.shard === 0 ? await this.moveStep() : null;
    if (nextStep !== null) await alarms.by(Date.now() + nextStep);
    const now = this.s.meta();
    if (!now || now.epoch !== meta.epoch) return; // dropped meanwhile
    await alarms.prune(this.pruneLedger(now));
    await alarms.flush(outbox.pending());
    // The table catches up in steps; the manifest follows flushes (each flush's alarm publishes it).
    // A publication that failed is tried again when its backoff ends, not sooner.
    const guard = new PublishGuard(this.s.sql);
    if (now.config.table && ledger.lastSeq() > metaStore.published("table") && !guard.failure("table")) await alarms.publish();
    const retryAt = guard.nextAttemptAt();
    if (retryAt !== null) await alarms.by(retryAt);
    // Commits that landed during the fan-out may have moved the watermark again.
    await this.evictionIfDue(now.config, meta.watermark, now.watermark);
    if (hasIdleTimeout(now.config)) await alarms.idle(now.config, this.s.sourceProgress());
  }

  /** Flushes everything waiting in the outbox now (the alarm does it when due); returns the entries flushed. */
  async flush(): Promise<number> {
    const meta = this.s.meta();
    if (!meta) return 0;
    let flushed = 0;
    for (let n = -1; n !== 0; flushed += n) {
      n = await this.flushChunk(meta);
    }
    return flushed;
  }

  /**
   * The eviction fan-out, when the watermark moved and some partition holds
   * a key due under it (its reported next expiry, a lower bound). A stream
   * whose keys outlive the moves (a watermark moving at every commit, keys
   * kept an hour) would otherwise run the alarm every EVICTION_DELAY_MS to
   * visit no partition.
   */
  async evictionIfDue(config: StreamConfig, before: number, after: number): Promise<void> {
    if (after > before && this.s.partitions.due(after).length > 0) await this.s.alarms.eviction(config);
  }

  /** One chunk of the outbox to R2; the state record is written to the state row when the rows that held it go. */
  private flushChunk(meta: Meta): Promise<number> {
    return this.s.outbox.flush(
      this.env.SINK,
      { stream: meta.name, epoch: meta.epoch },
      (fn) => this.ctx.storage.transactionSync(fn),
      () => void this.s.book.write(),
    );
  }

  /**
   * Forgets, in one bounded step (./window.ts), the committed groups past the
   * idempotency window that a retry can no longer change, and begin records
   * older than the partitions keep decisions. Returns when the next step is
   * due by the clock (null: a commit, the watermark or a publication brings
   * the alarm back).
   */
  private pruneLedger(meta: Meta): number | null {
    const now = Date.now();
    // The oldest group stays until its window has passed, whatever else happens: until then there is nothing to read.
    const step = now < this.s.pruneNotBefore ? { upTo: null, retryAt: this.s.pruneNotBefore } : this.nextPruneStep(meta, now);
    this.s.transaction(() => {
      if (step.upTo !== null) {
        this.s.ledger.prune(step.upTo);
        this.s.laneRefs.prune(step.upTo);
      }
      this.s.ledger.pruneBegun(now - LEDGER_RETENTION_MS);
    });
    if (step.upTo !== null) this.s.forgetCaches();
    return step.retryAt;
  }

  /** One prune step as the window decides it (./window.ts); one held back by the clock alone is not looked at again before its time. */
  private nextPruneStep(meta: Meta, now: number): { upTo: number | null; retryAt: number | null } {
    const { metaStore } = this.s;
    const published = meta.config.table ? Math.min(metaStore.published("manifest"), metaStore.published("table")) : metaStore.published("manifest");
    const step = pruneStep(this.s.ledger.oldest(PRUNE_STEP_GROUPS), {
      now,
      window: idempotencyWindowOf(meta.config),
      mode: meta.config.mode,
      watermark: meta.watermark,
      publishedUpTo: published,
    });
    this.s.pruneNotBefore = step.upTo === null && step.retryAt !== null && step.retryAt > now ? step.retryAt : 0;
    return step;
  }

  /** The meta row after sources that have turned idle left the watermark (which may then advance; with several shards, the clock says). */
  private async refreshIdle(): Promise<Meta | null> {
    const meta = this.s.meta();
    if (!meta || !hasIdleTimeout(meta.config)) return meta;
    if (isSharded(meta.config)) {
      await this.clock.refresh(meta).catch(() => undefined); // the clock unreachable: the watermark waits for the next report
      return this.s.meta();
    }
    const watermark = globalWatermark(meta.config, this.s.sourceProgress(), meta.watermark, Date.now());
    if (watermark === meta.watermark) return meta;
    this.s.metaStore.setWatermark(watermark);
    this.s.forgetCaches();
    return this.s.meta();
  }

  /** The committed manifest and, when configured, the Iceberg table catch up with the commits (src/output/publisher.ts). */
  private async publish(meta: Meta): Promise<void> {
    const { ledger, metaStore, outbox } = this.s;
    const ctx: PublishContext = {
      stream: meta.name,
      epoch: meta.epoch,
      shard: meta.shard,
      config: meta.config,
      bucket: this.env.SINK,
      lastSeq: ledger.lastSeq(),
      commits: (after, upTo, limit) => this.s.commits("data", after, upTo, limit),
      laneCommits: (lane, after, upTo, limit) => this.s.commits(lane, after, upTo, limit),
      progress: (what) => metaStore.published(what),
      setProgress: (what, seq) => metaStore.setPublished(what, seq),
      sweepAt: () => metaStore.tableSweepAt(),
      setSweepAt: (at) => metaStore.setTableSweepAt(at),
    };
    // Each publication on its own: one that throws is recorded and retried later, and takes nothing else with it.
    const guard = new PublishGuard(this.s.sql);
    // The manifest lists objects: commits still in the outbox wait for its flush, so it reads no further than the first of them (not their bytes).
    const waiting = outbox.firstSeq();
    await guard.attempt("manifest", Date.now(), () => publishManifest(waiting === null ? ctx : { ...ctx, lastSeq: Math.min(ctx.lastSeq, waiting - 1) }));
    const table = await guard.attempt("table", Date.now(), () => publishTable(ctx, Date.now()));
    if (table?.columns && this.s.meta()?.epoch === meta.epoch) recordColumns(this.s.sql, table.columns, Date.now());
  }

  /** Pushes the watermark to the partitions with a key due under it (PartitionBook.due) and records what they report. */
  private async evictDue(meta: Meta): Promise<void> {
    const watermark = meta.watermark;
    const results = await Promise.all(
      this.s.partitions
        .due(watermark)
        .map(async (p) => ({ p, ...(await partitionStub(this.env, meta.name, p, meta.mapVersion).advance(meta.epoch, watermark)) })),
    );
    const now = this.s.meta();
    if (!now || now.epoch !== meta.epoch || results.length === 0) return;
    this.s.partitions.record(results);
    this.s.book.write();
  }
}

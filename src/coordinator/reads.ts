import { undrained, type RescaleState } from "../rescale/state";
import { figuresDuringMove } from "../rescale/state-figures";
import type { PartitionStats } from "../partition/protocol";
import type { RescaleView } from "./protocol";
import { clockStub, partitionStub, type CoordinatorStub, type Env } from "../env";
import { own } from "../lib/own";
import { PublishGuard, tablePublishingOf, type TablePublishing } from "../output/publisher";
import { figuresFromJson, liveAdvice, mergeSourceFigures, type DelayFloor, type LiveAdvice, type LiveFiguresJson } from "../stream/advisor/live";
import { idempotencyWindowOf } from "../stream/config";
import { streamMetricsOf, webhookFigures, type StreamMetrics } from "../stream/metrics";
import type { ProgressReport } from "../stream/batch-outcome";
import { isIdle, sourceWatermark } from "../stream/watermark";
import { horizonReason, RETRY_HORIZON_MS } from "../webhooks/retry-horizon";
import type { Meta } from "./meta";
import type { StreamDescription, StreamLocation, StreamPublication, StreamSummary } from "./protocol";
import type { CoordinatorStores } from "./stores";
import { otherShards } from "./other-shards";
import { mergeProgress, mergePublication, mergeShardFigures, mergeTablePublishing, shardFiguresOf, type ShardFigures } from "./shard-figures";
import { intakeShardsOf, shardsOf } from "../stream/shards";
import { shardedWatermark } from "../stream/shard-watermark";
import { clockInterval } from "../clock/protocol";

/**
 * What callers read of a stream, one read per question (none writes):
 * - describe: everything GET /v1/streams/{stream} shows (calls every partition);
 * - summary: the same figures as the partitions last reported, for a list of streams (no partition calls but during a rescale);
 * - locate: where its output is, for readers of /output, the state reader and destinations;
 * - metrics: the /metrics counters; advice: the delay advisor;
 * - publication / tablePublishing: how far the manifest and the table hold the commits;
 * - progress: the recent batch reports.
 */
export class StreamReads {
  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
    /** resolves once no move step runs (src/coordinator/rescaling.ts) */
    private readonly moveSteps: () => Promise<void> = async () => {},
  ) {}

  async describe(): Promise<StreamDescription | null> {
    const meta = this.s.meta();
    if (!meta) return null;
    const [view, stats] = await Promise.all([this.view(meta), this.partitionFigures(meta)]);
    const progress = view.sources;
    const names = new Set([...Object.keys(meta.config.sources), ...Object.keys(progress)]);
    const sources: StreamDescription["sources"] = {};
    for (const s of [...names].sort()) {
      sources[s] = {
        maxEventTime: own(progress, s)?.maxEventTime ?? null,
        watermark: sourceWatermark(meta.config, s, own(progress, s)),
        lastBatchAt: own(progress, s)?.lastBatchAt ?? null,
        declared: Object.hasOwn(meta.config.sources, s),
        idle: isIdle(meta.config, s, own(progress, s), Date.now()),
      };
    }
    const webhooks = webhookFigures(view.counters);
    return {
      config: meta.config,
      epoch: meta.epoch,
      createdAt: meta.createdAt,
      watermark: view.watermark,
      watermarkApplied: view.watermarkApplied,
      sources,
      state: {
        ...totalsOf(stats),
        ...unkeyedHash(stats),
        largestPartitionBytes: stats.reduce((a, s) => Math.max(a, s.bytes), 0),
      },
      batches: { committed: view.committed },
      bookkeeping: { bytes: view.bytes, batchesRemembered: view.batchesRemembered, idempotencyWindow: idempotencyWindowOf(meta.config) },
      ...(webhooks.length > 0 ? { webhooks: Object.fromEntries(webhooks.map(({ source, ...w }) => [source, w])) } : {}),
      ...(meta.rescale ? { rescale: rescaleView(meta.rescale) } : {}),
      // A shard-count change cut short (preparing), or within the window its moved ids are asked of their old shard.
      ...(meta.shardChange && (meta.shardChange.phase === "preparing" || Date.now() < meta.shardChange.until) ? { shardChange: meta.shardChange } : {}),
    };
  }

  /** Every partition's figures; during a rescale the undrained old ones' too, each key counted once (src/rescale/state-figures.ts). */
  private async partitionFigures(meta: Meta): Promise<PartitionStats[]> {
    const next = (q: number) => partitionStub(this.env, meta.name, q, meta.mapVersion);
    if (!meta.rescale) return Promise.all(Array.from({ length: meta.config.partitions }, (_, q) => next(q).describe(meta.epoch)));
    // Between two move steps: the cursors are then those of the keys handed out.
    await this.moveSteps();
    const now = this.s.meta();
    if (!now || now.epoch !== meta.epoch) return []; // deleted meanwhile
    if (!now.rescale) return this.partitionFigures(now); // the move ended meanwhile
    const r = now.rescale;
    return figuresDuringMove(
      r,
      now.epoch,
      now.config.partitions,
      (p) => partitionStub(this.env, now.name, p, r.from.version),
      (q) => partitionStub(this.env, now.name, q, now.mapVersion),
    );
  }

  async summary(): Promise<StreamSummary | null> {
    const meta = this.s.meta();
    if (!meta) return null;
    const view = await this.view(meta);
    return { createdAt: meta.createdAt, watermark: view.watermark, state: await this.lastState(meta, view.state), batches: { committed: view.committed } };
  }

  /** This shard's own figures (shard 0 gathers them: ./shard-figures.ts). */
  shardFigures(): ShardFigures | null {
    return shardFiguresOf(this.s);
  }

  /** `indexedFrom`: the first commit the ledger's commit index still holds (earlier ones are read from the committed manifest). */
  locate(): StreamLocation | null {
    const meta = this.s.meta();
    if (!meta) return null;
    return {
      name: meta.name,
      epoch: meta.epoch,
      incarnation: meta.incarnation,
      partitions: meta.config.partitions,
      lastSeq: this.s.ledger.lastSeq(),
      indexedFrom: this.s.ledger.indexedFrom(),
      config: meta.config,
      shard: meta.shard,
      mapVersion: meta.mapVersion,
      rescale: meta.rescale,
      shardChange: meta.shardChange,
    };
  }

  async metrics(): Promise<StreamMetrics | null> {
    const meta = this.s.meta();
    if (!meta) return null;
    const view = await this.view(meta);
    const sources: Record<string, number> = {};
    for (const s of new Set([...Object.keys(meta.config.sources), ...Object.keys(view.sources)])) {
      sources[s] = sourceWatermark(meta.config, s, own(view.sources, s));
    }
    return streamMetricsOf(meta.name, view.counters, {
      watermark: view.watermark,
      sources,
      state: await this.lastState(meta, view.state),
      bookkeeping: { bytes: view.bytes, batchesRemembered: view.batchesRemembered },
    });
  }

  /**
   * The state as the partitions last reported it; during a rescale, asked
   * of them (old and new), since the old ones report nothing while their
   * keys move and a key may be in both.
   */
  private async lastState(meta: Meta, reported: { rows: number; bytes: number }): Promise<{ rows: number; bytes: number }> {
    if (!meta.rescale) return reported;
    return totalsOf(await this.partitionFigures(meta));
  }

  /** The delay advisor over the live figures (src/stream/advisor/live.ts), every shard's merged on shard 0. */
  async advice(): Promise<LiveAdvice | null> {
    const meta = this.s.meta();
    if (!meta) return null;
    const own = this.s.figures.all();
    const others = await Promise.all(otherShards(this.env, meta).map((o) => o.adviceFigures()));
    const sets = [own, ...others.map((text) => new Map((JSON.parse(text) as [string, LiveFiguresJson][]).map(([source, f]) => [source, figuresFromJson(f)])))];
    return liveAdvice(mergeSourceFigures(sets), meta.config, undefined, this.webhookFloors());
  }

  /** This shard's own live figures, as JSON (its state record's form; shard 0's advice() merges them). */
  adviceFigures(): string {
    return JSON.stringify(this.s.meta() ? this.s.figures.stored() : []);
  }

  /** For GET …/table and …/health: how far the table has got, and whether appending to it keeps failing. */
  async tablePublishing(): Promise<TablePublishing | null> {
    const meta = this.s.meta();
    if (!meta?.config.table) return null;
    const own = tablePublishingOf(this.s.metaStore.published("table"), this.s.ledger.lastSeq(), new PublishGuard(this.s.sql).failure("table"));
    return mergeTablePublishing(await this.everyShard(meta, own, (o) => o.tablePublishing()));
  }

  /**
   * How far the committed output is readable outside: the last commit, and
   * the last commit the manifest and the table (null: none configured) hold.
   * A file run is done only once they hold its commits
   * (src/sources/files/runner.ts), as Spark's processAllAvailable().
   */
  async publication(): Promise<StreamPublication | null> {
    const meta = this.s.meta();
    if (!meta) return null;
    const published = (what: "table" | "manifest") => this.s.metaStore.published(what);
    const own = {
      epoch: meta.epoch,
      committed: this.s.ledger.lastSeq(),
      manifest: published("manifest"),
      table: meta.config.table ? published("table") : null,
    };
    return mergePublication(await this.everyShard(meta, own, (o) => o.publication()));
  }

  /** The most recent `limit` progress reports, oldest first (over every shard, on shard 0). */
  async progress(limit: number): Promise<ProgressReport[]> {
    const meta = this.s.meta();
    if (!meta) return [];
    const all = await this.everyShard(meta, this.s.ledger.progress(limit), (o) => o.progress(limit));
    return all.length === 1
      ? all[0].value
      : mergeProgress(
          all.map((a) => a.value),
          limit,
        );
  }

  /** Shard 0 of a stream with several: every shard's figures (this one's first); otherwise this shard's. */
  private async gathered(meta: Meta): Promise<ShardFigures[]> {
    return (await this.everyShard(meta, shardFiguresOf(this.s)!, (o) => o.shardFigures())).map((a) => a.value);
  }

  /**
   * This shard's answer, and on shard 0 of a stream with several each other
   * shard's to the same question (one call each, at once), shard 0's first;
   * a shard with none (being deleted) is left out.
   */
  private async everyShard<T>(meta: Meta, own: T, ask: (shard: CoordinatorStub) => Promise<T | null> | T | null): Promise<{ shard: number; value: T }[]> {
    const others = otherShards(this.env, meta);
    const got = await Promise.all(others.map((o) => ask(o)));
    return [{ shard: meta.shard, value: own }, ...got.flatMap((value, i) => (value === null ? [] : [{ shard: i + 1, value: value as T }]))];
  }

  /** The figures a read answers with: this shard's, or on shard 0 of several every shard's merged, with the clock's watermark. */
  private async view(meta: Meta) {
    const figures = await this.gathered(meta);
    const merged = mergeShardFigures(figures);
    if (figures.length === 1) return { ...merged, watermark: meta.watermark, watermarkApplied: meta.watermark };
    const clock = await clockStub(this.env, meta.name).read(
      meta.epoch,
      figures.map((f) => ({ shard: f.shard, sources: f.sources, applied: f.watermark })),
    );
    // The watermark over every shard's progress as it is now (the clock's may not have heard the last commits yet),
    // and the lowest one a shard judges by: once they are equal, the next batch anywhere is judged as with one shard.
    const floor = Math.max(clock?.watermark ?? 0, ...figures.map((f) => f.watermark));
    const reports = figures.map((f) => ({ sources: f.sources, pending: {} }));
    const watermark = shardedWatermark(meta.config, reports, floor, Date.now(), clockInterval(shardsOf(meta.config)));
    // Shards that take no batches (after a PATCH to fewer) judge nothing: the clock no longer tells them.
    const judging = figures.filter((f) => f.shard < intakeShardsOf(meta.config));
    return { ...merged, watermark, watermarkApplied: Math.min(...judging.map((f) => f.watermark)) };
  }

  /** Per webhook source (one with a provider credential), the least delay the advisor may propose: its provider's retry horizon. */
  private webhookFloors(): Map<string, DelayFloor> {
    const floors = new Map<string, DelayFloor>();
    for (const [source, provider] of this.s.credentials.providers()) {
      if (RETRY_HORIZON_MS[provider] > 0) floors.set(source, { ms: RETRY_HORIZON_MS[provider], reason: horizonReason(provider) });
    }
    return floors;
  }
}

/** How many partitions store keys by the unkeyed hash of an earlier release (health warns: src/stream/health.ts), when any do. */
/** The partitions' rows and bytes, summed. */
const totalsOf = (stats: readonly PartitionStats[]) => ({ rows: stats.reduce((a, s) => a + s.rows, 0), bytes: stats.reduce((a, s) => a + s.bytes, 0) });

function unkeyedHash(stats: readonly { unkeyedHash?: true }[]): { unkeyedHashPartitions?: number } {
  const n = stats.filter((s) => s.unkeyedHash).length;
  return n > 0 ? { unkeyedHashPartitions: n } : {};
}

/** A rescale as GET shows it. */
function rescaleView(r: RescaleState): RescaleView {
  return { from: r.from.partitions, to: r.to, state: "moving", keysMoved: r.keysMoved, startedAt: r.startedAt, oldPartitionsLeft: undrained(r).length };
}

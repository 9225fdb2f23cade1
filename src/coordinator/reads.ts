import { partitionStub, type Env } from "../env";
import { own } from "../lib/own";
import { PublishGuard, tablePublishingOf, type TablePublishing } from "../output/publisher";
import { liveAdvice, type DelayFloor, type LiveAdvice } from "../stream/advisor/live";
import { idempotencyWindowOf } from "../stream/config";
import { streamMetricsOf, webhookFigures, type StreamMetrics } from "../stream/metrics";
import type { ProgressReport } from "../stream/batch-outcome";
import { isIdle, sourceWatermark } from "../stream/watermark";
import { horizonReason, RETRY_HORIZON_MS } from "../webhooks/retry-horizon";
import type { Meta } from "./meta";
import type { StreamDescription, StreamLocation, StreamPublication, StreamSummary } from "./protocol";
import type { CoordinatorStores } from "./stores";
import type { Bookkeeping } from "./window";

/**
 * What callers read of a stream, one read per question (none writes):
 * - describe: everything GET /v1/streams/{stream} shows (calls every partition);
 * - summary: the same figures as the partitions last reported, for a list of streams (no partition calls);
 * - locate: where its output is, for readers of /output, the state reader and destinations;
 * - metrics: the /metrics counters; advice: the delay advisor;
 * - publication / tablePublishing: how far the manifest and the table hold the commits;
 * - progress: the recent batch reports.
 */
export class StreamReads {
  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
  ) {}

  async describe(): Promise<StreamDescription | null> {
    const meta = this.s.meta();
    if (!meta) return null;
    const progress = this.s.sourceProgress();
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
    const stats = await Promise.all(Array.from({ length: meta.config.partitions }, (_, p) => partitionStub(this.env, meta.name, p).describe(meta.epoch)));
    // Commit numbers run 1, 2, 3… with no gaps: the last one is the count, without a scan of the ledger.
    const committed = this.s.ledger.lastSeq();
    const webhooks = webhookFigures(this.s.counters.all());
    return {
      config: meta.config,
      epoch: meta.epoch,
      createdAt: meta.createdAt,
      watermark: meta.watermark,
      sources,
      state: { rows: stats.reduce((a, s) => a + s.rows, 0), bytes: stats.reduce((a, s) => a + s.bytes, 0), ...unkeyedHash(stats) },
      batches: { committed },
      bookkeeping: this.bookkeeping(meta),
      ...(webhooks.length > 0 ? { webhooks: Object.fromEntries(webhooks.map(({ source, ...w }) => [source, w])) } : {}),
    };
  }

  summary(): StreamSummary | null {
    const meta = this.s.meta();
    if (!meta) return null;
    return { createdAt: meta.createdAt, watermark: meta.watermark, state: this.s.partitions.totals(), batches: { committed: this.s.ledger.lastSeq() } };
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
    };
  }

  metrics(): StreamMetrics | null {
    const meta = this.s.meta();
    if (!meta) return null;
    const progress = this.s.sourceProgress();
    const sources: Record<string, number> = {};
    for (const s of new Set([...Object.keys(meta.config.sources), ...Object.keys(progress)])) {
      sources[s] = sourceWatermark(meta.config, s, own(progress, s));
    }
    const { bytes, batchesRemembered } = this.bookkeeping(meta);
    return streamMetricsOf(meta.name, this.s.counters.all(), {
      watermark: meta.watermark,
      sources,
      state: this.s.partitions.totals(),
      bookkeeping: { bytes, batchesRemembered },
    });
  }

  /** The delay advisor over the live figures (src/stream/advisor/live.ts). */
  advice(): LiveAdvice | null {
    const meta = this.s.meta();
    return meta ? liveAdvice(this.s.figures.all(), meta.config, undefined, this.webhookFloors()) : null;
  }

  /** For GET …/table and …/health: how far the table has got, and whether appending to it keeps failing. */
  tablePublishing(): TablePublishing | null {
    const meta = this.s.meta();
    if (!meta?.config.table) return null;
    return tablePublishingOf(this.s.metaStore.published("table"), this.s.ledger.lastSeq(), new PublishGuard(this.s.sql).failure("table"));
  }

  /**
   * How far the committed output is readable outside: the last commit, and
   * the last commit the manifest and the table (null: none configured) hold.
   * A file run is done only once they hold its commits
   * (src/sources/files/runner.ts), as Spark's processAllAvailable().
   */
  publication(): StreamPublication | null {
    const meta = this.s.meta();
    if (!meta) return null;
    const published = (what: "table" | "manifest") => this.s.metaStore.published(what);
    return { epoch: meta.epoch, committed: this.s.ledger.lastSeq(), manifest: published("manifest"), table: meta.config.table ? published("table") : null };
  }

  /** The most recent `limit` progress reports, oldest first. */
  progress(limit: number): ProgressReport[] {
    if (!this.s.exists()) return [];
    return this.s.ledger.progress(limit);
  }

  /** The Coordinator's own storage and the batch ids it remembers (GET /v1/streams/{stream}, /metrics). */
  private bookkeeping(meta: Meta): Bookkeeping {
    return { bytes: this.s.storage.sql.databaseSize, batchesRemembered: this.s.ledger.remembered(), idempotencyWindow: idempotencyWindowOf(meta.config) };
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
function unkeyedHash(stats: readonly { unkeyedHash?: true }[]): { unkeyedHashPartitions?: number } {
  const n = stats.filter((s) => s.unkeyedHash).length;
  return n > 0 ? { unkeyedHashPartitions: n } : {};
}

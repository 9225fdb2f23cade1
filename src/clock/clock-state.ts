import type { StreamConfig } from "../stream/config";
import { intakeShardsOf, shardsOf } from "../stream/shards";
import { knownSources, mergeSources, shardedWatermark } from "../stream/shard-watermark";
import type { ClockAnswer, ClockReading, ClockReport, ShardNow } from "./report";

/** One shard as the clock knows it: its last report, when it came, and the watermark the shard judges by. */
interface ShardEntry {
  sources: ClockReport["sources"];
  pending: ClockReport["pending"];
  heardAt: number;
  applied: number;
}

/** What a clock keeps (its storage row holds it as JSON). */
export interface ClockData {
  stream: string;
  epoch: string;
  /** which creation of the stream's name (src/registry): a report of an older one is a leftover, refused */
  incarnation?: number;
  shards: number;
  configVersion: number;
  config: StreamConfig | null;
  watermark: number;
  entries: Record<string, ShardEntry>;
}

/**
 * A stream's clock as data (the Durable Object in ./clock.ts stores it): each
 * shard's last report in, the global watermark out (src/stream/shard-watermark.ts).
 */
export class ClockState {
  constructor(
    public data: ClockData,
    /** how old a shard's report may be: its interval (src/clock/report.ts clockInterval) */
    readonly lagMs: number,
  ) {}

  static fresh(stream: string, at: { epoch: string; incarnation: number }, shards: number, lagMs: number): ClockState {
    return new ClockState({ stream, ...at, shards, configVersion: 0, config: null, watermark: 0, entries: {} }, lagMs);
  }

  /** A shard's report: its figures replace its last ones; `grew`: the clock learned of a source (stored at once). */
  exchange(r: ClockReport, now: number): { answer: ClockAnswer; grew: boolean } {
    if (r.config && r.configVersion > this.data.configVersion) this.configure(r.configVersion, r.config);
    if (this.data.config === null || r.configVersion > this.data.configVersion) return { answer: { kind: "config" }, grew: false };
    this.data.shards = Math.max(this.data.shards, r.shards);
    const before = new Set(knownSources(this.data.config, this.reports()));
    this.data.entries[r.shard] = {
      sources: r.sources,
      pending: r.pending,
      heardAt: now,
      applied: Math.max(r.applied, this.data.entries[r.shard]?.applied ?? 0),
    };
    this.advance(now);
    const all = knownSources(this.data.config, this.reports());
    // The shard judges by this watermark from its answer on.
    this.data.entries[r.shard].applied = Math.max(this.data.entries[r.shard].applied, this.data.watermark);
    const known = knownSources(this.data.config, this.reports(), false);
    return { answer: { kind: "ok", watermark: this.data.watermark, known }, grew: all.some((n) => !before.has(n)) };
  }

  configure(version: number, config: StreamConfig): void {
    if (version < this.data.configVersion) return;
    this.data.configVersion = version;
    this.data.config = config;
    // New shards are told the watermark before they first report (a shard-count change ends by configuring the clock).
    this.data.shards = Math.max(this.data.shards, shardsOf(config));
  }

  /** The watermark at `now` (idle sources may let it move without a report). */
  advance(now: number): number {
    if (this.data.config) this.data.watermark = shardedWatermark(this.data.config, this.reports(), this.data.watermark, now, this.lagMs);
    return this.data.watermark;
  }

  /** Shards that judge by an older watermark and have not asked for an interval: the clock tells them (those taking no batches need not know). */
  lagging(now: number): number[] {
    const out: number[] = [];
    for (let k = 0; k < this.judging(); k++) {
      const e = this.data.entries[k];
      if ((e?.applied ?? 0) < this.data.watermark && (!e || now - e.heardAt >= this.lagMs)) out.push(k);
    }
    return out;
  }

  /** Every shard's figures as a read gathered them just now (fresher than their last reports): taken in, so that shards behind are told. */
  observe(fresh: readonly ShardNow[]): void {
    for (const f of fresh) {
      const e = (this.data.entries[f.shard] ??= { sources: {}, pending: {}, heardAt: 0, applied: 0 });
      e.sources = f.sources;
      e.applied = f.applied;
    }
  }

  /** Shard k was told `watermark`. */
  told(k: number, watermark: number): void {
    const e = (this.data.entries[k] ??= { sources: {}, pending: {}, heardAt: 0, applied: 0 });
    e.applied = Math.max(e.applied, watermark);
  }

  reading(now: number): ClockReading {
    const watermark = this.advance(now);
    let applied = watermark;
    for (let k = 0; k < this.judging(); k++) applied = Math.min(applied, this.data.entries[k]?.applied ?? 0);
    return { watermark, applied, sources: mergeSources(this.reports()) };
  }

  /** The shards that judge batches (0 … n − 1); the others' reports still count for their sources' progress. */
  private judging(): number {
    return Math.min(this.data.shards, this.data.config ? intakeShardsOf(this.data.config) : this.data.shards);
  }

  private reports() {
    return Object.values(this.data.entries);
  }
}

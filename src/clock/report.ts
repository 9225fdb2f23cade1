/** What a shard and its stream's clock say to each other (./protocol.ts is the clock's RPC over them). */
import type { StreamConfig } from "../stream/config";
import type { ShardSources } from "../stream/shard-watermark";
import type { SourceProgress } from "../stream/watermark";

/** How often a shard exchanges figures with its stream's clock at most (DESIGN §12): the clock takes at most 10 × shards calls a second. */
export const CLOCK_INTERVAL_MS = 100;

/** …and with more than 50 shards, 2 ms × shards, so that the clock itself takes at most 500 calls a second. */
export function clockInterval(shards: number): number {
  return Math.max(CLOCK_INTERVAL_MS, 2 * shards);
}

/** What a shard tells the clock: its sources' progress, and the watermark it judges by now. */
export interface ClockReport extends ShardSources {
  stream: string;
  epoch: string;
  incarnation: number;
  shard: number;
  shards: number;
  configVersion: number;
  /** sent when the clock asked for it (its config is older than configVersion) */
  config?: StreamConfig;
  /** the watermark the shard judges by */
  applied: number;
}

export type ClockAnswer =
  /** the clock's config is older than the report's: send it again with `config` */
  | { kind: "config" }
  /** the report is of an incarnation of the stream older than the clock's (a shard a delete left behind) */
  | { kind: "stale" }
  /** the global watermark, and every source the clock knows of (one the shard commits for the first time must be reported first) */
  | { kind: "ok"; watermark: number; known: string[] };

/** A shard's committed progress and the watermark it judges by, as a read of the stream gathered them. */
export interface ShardNow {
  shard: number;
  sources: Record<string, SourceProgress>;
  applied: number;
}

/** What GET /v1/streams/{stream} reads of the clock. */
export interface ClockReading {
  watermark: number;
  /** the lowest watermark a shard judges by (as the clock last heard or told it) */
  applied: number;
  /** per source, the largest progress any shard reported */
  sources: Record<string, SourceProgress>;
}

/** What a clock pushes to a shard that has not asked lately (CoordinatorRpc.applyWatermark). */
export interface WatermarkPush {
  epoch: string;
  watermark: number;
}

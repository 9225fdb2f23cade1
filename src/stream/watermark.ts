import { delayOf, sourceConfig, type StreamConfig } from "./config";
import { own } from "./own";

export interface SourceProgress {
  /** max event time accepted from this source, null until it first sends */
  maxEventTime: number | null;
  lastBatchAt: number | null;
}

export interface WatermarkState {
  /** global watermark, epoch ms; starts at 0 and never decreases */
  watermark: number;
  sources: Record<string, SourceProgress>;
}

export const INITIAL_WATERMARK: WatermarkState = { watermark: 0, sources: {} };

/** wm_s = max(T seen from s) - delay_s; a source that has not sent counts as 0. */
export function sourceWatermark(config: StreamConfig, source: string, progress: SourceProgress | undefined): number {
  if (!progress || progress.maxEventTime === null) return 0;
  return Math.max(0, progress.maxEventTime - delayOf(config, source));
}

/**
 * The global watermark: min (or max) of the source watermarks over declared
 * sources and every source that has sent, never below `previous`.
 */
export function globalWatermark(config: StreamConfig, sources: Record<string, SourceProgress>, previous: number): number {
  // An undeclared source joins once it has had a row accepted.
  // A disabled source is retired: it no longer holds the watermark back.
  const spoken = Object.keys(sources).filter((s) => own(sources, s)!.maxEventTime !== null);
  const names = new Set([...Object.keys(config.sources), ...spoken].filter((s) => !sourceConfig(config, s)?.disabled));
  if (config.eventTime === null || names.size === 0) return previous;
  const marks = [...names].map((s) => sourceWatermark(config, s, own(sources, s)));
  const policy = config.watermarkPolicy === "min" ? Math.min(...marks) : Math.max(...marks);
  return Math.max(previous, policy);
}

/**
 * Folds a committed batch into the watermark state. `batchMaxEventTime` is the
 * max event time over the batch's accepted rows (late and duplicate included),
 * null when it had none.
 */
export function advanceWatermark(
  config: StreamConfig,
  state: WatermarkState,
  source: string,
  batchMaxEventTime: number | null,
  now: number,
): WatermarkState {
  const before = own(state.sources, source);
  const maxEventTime =
    batchMaxEventTime === null ? (before?.maxEventTime ?? null) : Math.max(before?.maxEventTime ?? -Infinity, batchMaxEventTime);
  const sources = { ...state.sources, [source]: { maxEventTime, lastBatchAt: now } };
  return { sources, watermark: globalWatermark(config, sources, state.watermark) };
}

import { delayOf, idleTimeoutOf, sourceConfig, type StreamConfig } from "./config";
import { own } from "../lib/own";

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
 * Whether a source is idle at `now`: it has an idle timeout and its last batch
 * committed that long ago or longer (Flink's withIdleness). A source that has
 * never committed a batch is never idle: a declared source that never speaks
 * still holds the watermark back, as in Spark. Without `now` nothing is idle.
 */
export function isIdle(config: StreamConfig, source: string, progress: SourceProgress | undefined, now: number | undefined): boolean {
  if (now === undefined || !progress || progress.lastBatchAt === null) return false;
  const timeout = idleTimeoutOf(config, source);
  return timeout !== undefined && now - progress.lastBatchAt >= timeout;
}

/** Whether any source can turn idle (the stream or a source has an idleTimeout). */
export function hasIdleTimeout(config: StreamConfig): boolean {
  return config.idleTimeout !== undefined || Object.values(config.sources).some((s) => s.idleTimeout !== undefined);
}

/**
 * The sources the global watermark is taken over: declared ones and every one
 * that has had a row accepted, less the disabled (retired) and, at `now`, the idle.
 */
export function watermarkSources(config: StreamConfig, sources: Record<string, SourceProgress>, now?: number): string[] {
  // An undeclared source joins once it has had a row accepted.
  // A disabled source is retired: it no longer holds the watermark back.
  const spoken = Object.keys(sources).filter((s) => own(sources, s)!.maxEventTime !== null);
  const names = new Set([...Object.keys(config.sources), ...spoken].filter((s) => !sourceConfig(config, s)?.disabled));
  return [...names].filter((s) => !isIdle(config, s, own(sources, s), now));
}

/**
 * The global watermark: min (or max) of the source watermarks over declared
 * sources and every source that has sent, never below `previous`. With `now`,
 * idle sources are left out; when every source is idle it stays where it is.
 */
export function globalWatermark(config: StreamConfig, sources: Record<string, SourceProgress>, previous: number, now?: number): number {
  const names = watermarkSources(config, sources, now);
  if (config.eventTime === null || names.length === 0) return previous;
  const marks = names.map((s) => sourceWatermark(config, s, own(sources, s)));
  const policy = config.watermarkPolicy === "min" ? Math.min(...marks) : Math.max(...marks);
  return Math.max(previous, policy);
}

/**
 * When the next source turns idle after `now` (null: none will), so that an
 * alarm can recompute the watermark then even if nothing else commits.
 */
export function nextIdleAt(config: StreamConfig, sources: Record<string, SourceProgress>, now: number): number | null {
  let next: number | null = null;
  for (const s of watermarkSources(config, sources, now)) {
    const p = own(sources, s);
    const timeout = idleTimeoutOf(config, s);
    if (!p || p.lastBatchAt === null || timeout === undefined) continue;
    const at = p.lastBatchAt + timeout;
    if (at > now && (next === null || at < next)) next = at;
  }
  return next;
}

/**
 * Folds a committed batch into the watermark state. `batchMaxEventTime` is the
 * max event time over the batch's accepted rows (late and duplicate included),
 * null when it had none. The committing source is active again (not idle)
 * from this commit; other sources are judged idle or not at `now`.
 */
export function advanceWatermark(config: StreamConfig, state: WatermarkState, source: string, batchMaxEventTime: number | null, now: number): WatermarkState {
  const before = own(state.sources, source);
  const maxEventTime = batchMaxEventTime === null ? (before?.maxEventTime ?? null) : Math.max(before?.maxEventTime ?? -Infinity, batchMaxEventTime);
  const sources = { ...state.sources, [source]: { maxEventTime, lastBatchAt: now } };
  return { sources, watermark: globalWatermark(config, sources, state.watermark, now) };
}

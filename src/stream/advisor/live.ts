/**
 * The delay advisor's figures kept live (issue 10): per source, what the CLI
 * measures over a history (src/stream/advisor/measure.ts), updated at each
 * committed batch and kept in the Coordinator. Pure: the Coordinator hands in
 * each batch's event times and the duplicate gaps its partitions reported, and
 * the recommendation comes from recommend.ts, as the CLI's does.
 */
import { formatInterval } from "../interval.ts";
import { delayOf, sourceConfig, type StreamConfig } from "../config.ts";
import { disorderFigures, gapFigures, type DisorderFigures, type GapFigures } from "./measure.ts";
import { DEFAULT_MARGIN, recommendDelay, type Recommendation } from "./recommend.ts";
import { QuantileSketch, type SketchJson } from "./sketch.ts";

/**
 * Buckets a live sketch keeps at most: at α = 1% that spans a factor of
 * ~5 × 10⁸ below the largest value (1 ms to 5.6 days), beyond which the smallest values
 * are folded together (QuantileSketch.capBuckets). About 12 kB of JSON at worst.
 */
export const LIVE_SKETCH_BUCKETS = 1_000;

/** The Coordinator's table of them: a source's figures as LiveFiguresJson text. */
export const ADVICE_TABLE = "CREATE TABLE IF NOT EXISTS advice (source TEXT PRIMARY KEY, figures TEXT NOT NULL) WITHOUT ROWID;";

export interface LiveFigures {
  /** accepted rows (emitted, duplicate or late) */
  rows: number;
  duplicates: number;
  /** |T − T_first| of every duplicate against the copy that was kept, ms */
  gaps: QuantileSketch;
  /** per row: the source's max event time before it − T, or 0, ms */
  disorder: QuantileSketch;
}

export interface LiveFiguresJson {
  rows: number;
  duplicates: number;
  gaps: SketchJson;
  disorder: SketchJson;
}

/** What one committed batch adds to its source's figures. */
export interface BatchObservation {
  /** the accepted rows' event times in input order (rows without one left out) */
  times: number[];
  /** the event-time gap of each duplicate to its kept copy (where both have an event time) */
  gaps: number[];
}

export const emptyFigures = (): LiveFigures => ({ rows: 0, duplicates: 0, gaps: new QuantileSketch(), disorder: new QuantileSketch() });

export const figuresToJson = (f: LiveFigures): LiveFiguresJson => ({
  rows: f.rows,
  duplicates: f.duplicates,
  gaps: f.gaps.toJSON(),
  disorder: f.disorder.toJSON(),
});

export const figuresFromJson = (j: LiveFiguresJson): LiveFigures => ({
  rows: j.rows,
  duplicates: j.duplicates,
  gaps: QuantileSketch.fromJSON(j.gaps),
  disorder: QuantileSketch.fromJSON(j.disorder),
});

/**
 * Adds a batch to its source's figures. `maxBefore` is the source's max event
 * time before this batch (null: none yet); a row's disorder is measured against
 * it and the earlier rows of the batch, in order. Returns the max after it.
 */
export function observeBatch(f: LiveFigures, counts: { rows: number; duplicates: number }, seen: BatchObservation, maxBefore: number | null): number | null {
  f.rows += counts.rows;
  f.duplicates += counts.duplicates;
  let max = maxBefore;
  for (const t of seen.times) {
    f.disorder.add(max === null || t >= max ? 0 : max - t);
    if (max === null || t > max) max = t;
  }
  for (const g of seen.gaps) f.gaps.add(Math.abs(g));
  f.gaps.capBuckets(LIVE_SKETCH_BUCKETS);
  f.disorder.capBuckets(LIVE_SKETCH_BUCKETS);
  return max;
}

/** All sources' figures as one (the stream's). */
export function mergeFigures(all: Iterable<LiveFigures>): LiveFigures {
  const out = emptyFigures();
  for (const f of all) {
    out.rows += f.rows;
    out.duplicates += f.duplicates;
    out.gaps.merge(f.gaps);
    out.disorder.merge(f.disorder);
  }
  return out;
}

/** Each source's figures over several sets of them (a stream's shards each keep their own): summed, their sketches merged. */
export function mergeSourceFigures(sets: readonly ReadonlyMap<string, LiveFigures>[]): Map<string, LiveFigures> {
  if (sets.length === 1) return new Map(sets[0]);
  const by = new Map<string, LiveFigures[]>();
  for (const set of sets) for (const [source, f] of set) (by.get(source) ?? by.set(source, []).get(source)!).push(f);
  return new Map([...by].map(([source, list]) => [source, mergeFigures(list)]));
}

export interface DelayFigure {
  ms: number;
  /** Spark-style, as a stream's config takes it */
  interval: string;
}

/** One source's figures (or the stream's), in the CLI's shapes (`edge-dedup advise --json`). */
export interface LiveAdviceFigures {
  rows: number;
  duplicates: number;
  /** duplicates / rows */
  duplicateRate: number;
  gaps: GapFigures;
  disorder: DisorderFigures;
  recommendation: Recommendation;
  /** the delay configured now (null: a global stream without an event time) */
  currentDelay: DelayFigure | null;
}

export interface LiveAdvice {
  margin: number;
  /** over all sources, as the CLI recommends for a whole history */
  overall: LiveAdviceFigures;
  sources: Record<string, LiveAdviceFigures>;
}

/**
 * The least delay a source may be advised, and why: a provider webhook
 * source's retry horizon (src/webhooks/retry-horizon.ts), which its figures
 * can't show until an outage has happened.
 */
export interface DelayFloor {
  ms: number;
  reason: string;
}

function adviceOf(f: LiveFigures, margin: number, delay: number | null, floor: DelayFloor | undefined): LiveAdviceFigures {
  const measured = recommendDelay(f, margin);
  const recommendation =
    floor !== undefined && floor.ms > measured.delayMs ? { ...measured, delayMs: floor.ms, watermarkDelay: formatInterval(floor.ms), floor } : measured;
  return {
    rows: f.rows,
    duplicates: f.duplicates,
    duplicateRate: f.rows === 0 ? 0 : f.duplicates / f.rows,
    gaps: gapFigures(f.gaps),
    disorder: disorderFigures(f.disorder),
    recommendation,
    currentDelay: delay === null ? null : { ms: delay, interval: formatInterval(delay) },
  };
}

/**
 * The advice for a stream from its sources' live figures: per source, and over
 * all of them. `floors`: per source, the least delay it may be advised (a
 * webhook source's provider retries); the stream's advice keeps the largest
 * floor of the sources that take the stream's delay.
 */
export function liveAdvice(
  figures: ReadonlyMap<string, LiveFigures>,
  config: StreamConfig,
  margin: number = DEFAULT_MARGIN,
  floors: ReadonlyMap<string, DelayFloor> = new Map(),
): LiveAdvice {
  const timed = config.eventTime !== null;
  const sources: Record<string, LiveAdviceFigures> = {};
  for (const [name, f] of [...figures].sort(([a], [b]) => a.localeCompare(b))) {
    sources[name] = adviceOf(f, margin, timed ? delayOf(config, name) : null, timed ? floors.get(name) : undefined);
  }
  let streamFloor: DelayFloor | undefined;
  for (const [name, floor] of floors) {
    if (sourceConfig(config, name)?.watermarkDelay === undefined && floor.ms > (streamFloor?.ms ?? 0))
      streamFloor = { ms: floor.ms, reason: `source ${name}: ${floor.reason}` };
  }
  return { margin, overall: adviceOf(mergeFigures(figures.values()), margin, timed ? config.watermarkDelay : null, timed ? streamFloor : undefined), sources };
}

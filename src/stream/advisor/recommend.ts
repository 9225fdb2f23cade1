/**
 * From measurements to a `watermarkDelay`: cover the p99.9 duplicate gap and
 * the p99.9 disorder, times a margin, rounded up to a friendly interval; then
 * replay the history under that delay to show what it would have caught, and
 * estimate the state each mode would hold.
 */
import { formatInterval } from "../interval.ts";
import type { HistoryEvent } from "./history.ts";
import type { Measurements } from "./measure.ts";

export const DEFAULT_MARGIN = 1.2;
/**
 * Bytes a partition's SQLite storage spends per remembered key, every table
 * counted, for text keys of ~20 bytes (48 B measured for 18-byte keys by
 * test/integration/partition/compact-state.test.ts; docs/concepts/state.md). Longer keys
 * cost their extra length on top; hashed keys (`stateKeys: "hashed"`) ~32 B.
 */
export const DEFAULT_BYTES_PER_KEY = 50;

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;
const W = 7 * D;
/** The delays the advisor recommends: round numbers of one unit. */
export const FRIENDLY_DELAYS: readonly number[] = [
  1 * S,
  2 * S,
  5 * S,
  10 * S,
  15 * S,
  20 * S,
  30 * S,
  1 * MIN,
  2 * MIN,
  5 * MIN,
  10 * MIN,
  15 * MIN,
  20 * MIN,
  30 * MIN,
  1 * H,
  2 * H,
  3 * H,
  4 * H,
  6 * H,
  8 * H,
  12 * H,
  1 * D,
  2 * D,
  3 * D,
  4 * D,
  5 * D,
  6 * D,
  1 * W,
];

/** The smallest friendly delay ≥ ms (whole weeks past one week; at least 1 second). */
export function friendlyCeil(ms: number): number {
  for (const d of FRIENDLY_DELAYS) if (d >= ms) return d;
  return Math.ceil(ms / W) * W;
}

export interface Recommendation {
  /** the interval to configure, e.g. "15 minutes" */
  watermarkDelay: string;
  delayMs: number;
  margin: number;
  /**
   * p99.9 of the duplicate gaps and of the disorder, ms (0 when there are
   * none): the sketch's upper bounds, never below the exact figures and at most
   * ~2% above them, so that the delay covers them
   */
  gapP999: number;
  disorderP999: number;
  /** which of the two set the delay */
  basis: "duplicate gaps" | "disorder";
  /** max(gapP999, disorderP999) × margin, before rounding up */
  neededMs: number;
  /** how many values the two p99.9 were read from */
  sample: { gaps: number; events: number };
  /** set when the sample is too small for a p99.9 to mean much: say so next to the number */
  caveat: string | null;
  /** set when a floor raised the delay above what the figures need (a webhook provider's retries, src/stream/advisor/live.ts) */
  floor?: { ms: number; reason: string };
}

/** A p99.9 read from fewer values than this is mostly the maximum of a few: the advice says so. */
export const MIN_SAMPLE = 1_000;

/** The small-sample warning, or null when both distributions have MIN_SAMPLE values. */
export function sampleCaveat(gaps: number, events: number): string | null {
  if (gaps >= MIN_SAMPLE && events >= MIN_SAMPLE) return null;
  const few = (n: number, what: string) => `${n.toLocaleString("en-US")} ${what}${n === 1 ? "" : "s"}`;
  return `small sample: read from ${few(events, "event")} and ${few(gaps, "duplicate gap")}; a p99.9 needs about ${MIN_SAMPLE.toLocaleString("en-US")} of each to mean much, so treat this delay as a floor and ask again with more history`;
}

/** `m`: the two distributions, from a history (measure) or kept live per source (live.ts). */
export function recommendDelay(m: Pick<Measurements, "gaps" | "disorder">, margin: number = DEFAULT_MARGIN): Recommendation {
  if (!(margin >= 1) || !Number.isFinite(margin)) throw new RangeError("the margin must be a number ≥ 1");
  const gap = Math.ceil(m.gaps.quantileUpperBound(0.999) ?? 0);
  const disorder = Math.ceil(m.disorder.quantileUpperBound(0.999) ?? 0);
  const neededMs = Math.ceil(Math.max(gap, disorder) * margin);
  const delayMs = friendlyCeil(neededMs);
  return {
    watermarkDelay: formatInterval(delayMs),
    delayMs,
    margin,
    gapP999: gap,
    disorderP999: disorder,
    basis: gap >= disorder ? "duplicate gaps" : "disorder",
    neededMs,
    sample: { gaps: m.gaps.count, events: m.disorder.count },
    caveat: sampleCaveat(m.gaps.count, m.disorder.count),
  };
}

export interface Simulation {
  delayMs: number;
  rows: number;
  emitted: number;
  /** rows whose key was seen before in the history */
  copies: number;
  /** copies dropped as duplicates (their key was still remembered) */
  caught: number;
  /** copies dropped as late: not in the output either, but counted late */
  lateCopies: number;
  /** copies emitted again: the key had been evicted, or its first copy was late */
  letThrough: number;
  /** rows with T ≤ the watermark */
  late: number;
  caughtShare: number;
  letThroughShare: number;
  lateShare: number;
}

/**
 * The history through the `within-watermark` rules (DESIGN §2) with one delay:
 * each row a batch of its own, judged by the watermark before it; per-source
 * watermarks max T − delay, global = their minimum (policy `min`, sources join
 * when they first send), never decreasing; late when T ≤ wm; a key is
 * remembered until wm ≥ T_first + delay. Real batches judge all their rows by
 * the watermark from before the batch, so they see at most this many late rows.
 */
export function simulate(events: Iterable<HistoryEvent>, delayMs: number): Simulation {
  const seen = new Set<string>();
  const remembered = new Map<string, number>(); // key → T_first of the emitted copy
  const maxOf = new Map<string, number>();
  let wm = 0;
  let rows = 0;
  let emitted = 0;
  let copies = 0;
  let caught = 0;
  let lateCopies = 0;
  let letThrough = 0;
  let late = 0;
  for (const e of events) {
    rows++;
    const copy = seen.has(e.key);
    if (copy) copies++;
    else seen.add(e.key);
    if (e.time <= wm) {
      late++;
      if (copy) lateCopies++;
    } else {
      const first = remembered.get(e.key);
      if (first !== undefined && wm < first + delayMs) caught++;
      else {
        emitted++;
        remembered.set(e.key, e.time);
        if (copy) letThrough++;
      }
    }
    // Every accepted row moves its source's watermark, late and duplicate ones too.
    const max = maxOf.get(e.source);
    if (max === undefined || e.time > max) {
      maxOf.set(e.source, e.time);
      let low = Infinity;
      for (const t of maxOf.values()) if (t < low) low = t;
      if (low - delayMs > wm) wm = low - delayMs;
    }
  }
  const share = (n: number, of: number) => (of === 0 ? 0 : n / of);
  return {
    delayMs,
    rows,
    emitted,
    copies,
    caught,
    lateCopies,
    letThrough,
    late,
    caughtShare: share(caught, copies),
    letThroughShare: share(letThrough, copies),
    lateShare: share(late, rows),
  };
}

export interface StateEstimate {
  bytesPerKey: number;
  /** events per second of event time over the history (null when it spans no time) */
  ratePerSecond: number | null;
  withinWatermark: { keys: number; bytes: number } | null;
  eventTimeKey: { keys: number; bytes: number } | null;
  global: { keysPerDay: number; bytesPerDay: number } | null;
}

/**
 * State per mode at the history's arrival rate (an upper bound: copies that
 * are caught add no key). `within-watermark` keeps a key until wm ≥ T_first +
 * delay, and wm trails the newest event by the delay: ~2 × delay of arrivals.
 * `event-time-key` keeps it until wm ≥ T: ~1 × delay. `global` never forgets:
 * new distinct keys per day.
 */
export function estimateState(m: Measurements, delayMs: number, bytesPerKey: number = DEFAULT_BYTES_PER_KEY): StateEstimate {
  const span = m.firstTime === null || m.lastTime === null ? 0 : m.lastTime - m.firstTime;
  if (span <= 0) return { bytesPerKey, ratePerSecond: null, withinWatermark: null, eventTimeKey: null, global: null };
  const rate = m.events / (span / S);
  const held = (seconds: number) => {
    const keys = Math.round(rate * seconds);
    return { keys, bytes: keys * bytesPerKey };
  };
  const keysPerDay = Math.round((m.distinctKeys / span) * D);
  return {
    bytesPerKey,
    ratePerSecond: rate,
    withinWatermark: held((2 * delayMs) / S),
    eventTimeKey: held(delayMs / S),
    global: { keysPerDay, bytesPerDay: keysPerDay * bytesPerKey },
  };
}

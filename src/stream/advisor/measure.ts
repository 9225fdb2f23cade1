/**
 * One pass over a history: duplicates, the event-time gaps between copies of a
 * key, and how far out of order each source delivers. Memory: one first-seen
 * time per distinct key (exact, as the duplicate rate needs) and one quantile
 * sketch per source; the distributions themselves are never kept.
 */
import type { HistoryEvent } from "./history.ts";
import { QuantileSketch } from "./sketch.ts";

export interface Measurements {
  events: number;
  distinctKeys: number;
  /** rows whose key was seen before in the history */
  duplicates: number;
  /** |T_copy − T_first| for every later copy of a key, ms */
  gaps: QuantileSketch;
  /** per event: max T seen so far from its source − T, or 0 when in order, ms; all sources */
  disorder: QuantileSketch;
  /** the same per source, by name in order of first appearance */
  disorderBySource: Map<string, QuantileSketch>;
  /** event-time range of the history, epoch ms; null when empty */
  firstTime: number | null;
  lastTime: number | null;
}

export function measure(events: Iterable<HistoryEvent>, alpha?: number): Measurements {
  const firstTimeOf = new Map<string, number>();
  const maxTimeOf = new Map<string, number>();
  const gaps = new QuantileSketch(alpha);
  const disorder = new QuantileSketch(alpha);
  const bySource = new Map<string, QuantileSketch>();
  let n = 0;
  let duplicates = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const e of events) {
    n++;
    if (e.time < lo) lo = e.time;
    if (e.time > hi) hi = e.time;
    const first = firstTimeOf.get(e.key);
    if (first === undefined) firstTimeOf.set(e.key, e.time);
    else {
      duplicates++;
      gaps.add(Math.abs(e.time - first));
    }
    const max = maxTimeOf.get(e.source);
    const behind = max === undefined || e.time >= max ? 0 : max - e.time;
    if (max === undefined || e.time > max) maxTimeOf.set(e.source, e.time);
    let sketch = bySource.get(e.source);
    if (!sketch) bySource.set(e.source, (sketch = new QuantileSketch(alpha)));
    sketch.add(behind);
    disorder.add(behind);
  }
  return {
    events: n,
    distinctKeys: firstTimeOf.size,
    duplicates,
    gaps,
    disorder,
    disorderBySource: bySource,
    firstTime: n === 0 ? null : lo,
    lastTime: n === 0 ? null : hi,
  };
}

export interface GapFigures {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  "p99.9": number | null;
  max: number | null;
}

export interface DisorderFigures {
  events: number;
  /** events behind their source's max event time so far */
  outOfOrder: number;
  outOfOrderShare: number;
  p50: number | null;
  p99: number | null;
  "p99.9": number | null;
  max: number | null;
}

/** Quantiles as whole ms, rounded up (they are bounds the delay has to cover). */
const q = (s: QuantileSketch, p: number) => {
  const v = s.quantile(p);
  return v === null ? null : Math.ceil(v);
};

export function gapFigures(s: QuantileSketch): GapFigures {
  return { count: s.count, p50: q(s, 0.5), p90: q(s, 0.9), p99: q(s, 0.99), "p99.9": q(s, 0.999), max: s.max };
}

export function disorderFigures(s: QuantileSketch): DisorderFigures {
  const outOfOrder = s.count - s.zeroCount;
  return {
    events: s.count,
    outOfOrder,
    outOfOrderShare: s.count === 0 ? 0 : outOfOrder / s.count,
    p50: q(s, 0.5),
    p99: q(s, 0.99),
    "p99.9": q(s, 0.999),
    max: s.max,
  };
}

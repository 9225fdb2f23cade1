/**
 * The delay advisor (issue 10): measures a history of events and recommends a
 * `watermarkDelay`. Pure: it takes rows (any iterable, read twice) and returns
 * figures; reading files is the CLI's business (src/cli/advise.ts).
 */
import { eventsOf, HistoryNotes, type HistoryColumns } from "./history.ts";
import { disorderFigures, gapFigures, measure, type DisorderFigures, type GapFigures } from "./measure.ts";
import type { QuantileSketch } from "./sketch.ts";
import {
  DEFAULT_BYTES_PER_KEY,
  DEFAULT_MARGIN,
  estimateState,
  recommendDelay,
  simulate,
  type Recommendation,
  type Simulation,
  type StateEstimate,
} from "./recommend.ts";

export { eventOf, eventsOf, HistoryNotes, DEFAULT_SOURCE, type HistoryColumns, type HistoryEvent } from "./history.ts";
export { measure, gapFigures, disorderFigures, type Measurements, type GapFigures, type DisorderFigures } from "./measure.ts";
export {
  DEFAULT_BYTES_PER_KEY,
  DEFAULT_MARGIN,
  FRIENDLY_DELAYS,
  friendlyCeil,
  recommendDelay,
  simulate,
  estimateState,
  type Recommendation,
  type Simulation,
  type StateEstimate,
} from "./recommend.ts";
export { QuantileSketch, DEFAULT_RELATIVE_ACCURACY, exactQuantile, quantileRank, type SketchJson, type SketchBucket } from "./sketch.ts";
export { renderHistogram, histogramBins, shortDuration, bar, HISTOGRAM_EDGES } from "./histogram.ts";
export { renderAdvice } from "./report.ts";
export type { Advice, AdviceWithSketches } from "./advice.ts";
import type { Advice, AdviceWithSketches } from "./advice.ts";

export interface AdviseOptions extends HistoryColumns {
  /** default 1.2 */
  margin?: number;
  /** default DEFAULT_BYTES_PER_KEY */
  bytesPerKey?: number;
  /** names the row just read in notes (default "row N") */
  where?: (index: number) => string;
}

/**
 * Two passes over `open()`'s rows: measure, then replay under the recommended
 * delay. `open` must give the same rows each time; `notes` gathers the rows
 * skipped in the first pass.
 */
export function advise(open: () => Iterable<unknown>, options: AdviseOptions, notes: HistoryNotes = new HistoryNotes()): AdviceWithSketches {
  const m = measure(eventsOf(open(), options, notes, options.where));
  const recommendation = recommendDelay(m, options.margin ?? DEFAULT_MARGIN);
  const simulation = simulate(eventsOf(open(), options), recommendation.delayMs);
  const sources: Record<string, DisorderFigures> = {};
  for (const [name, s] of m.disorderBySource) sources[name] = disorderFigures(s);
  const advice: Advice = {
    events: m.events,
    distinctKeys: m.distinctKeys,
    duplicates: m.duplicates,
    duplicateRate: m.events === 0 ? 0 : m.duplicates / m.events,
    skipped: { rows: notes.skipped, examples: notes.examples },
    implausibleTimes: notes.implausibleMs,
    span: { from: m.firstTime, to: m.lastTime, ms: m.firstTime === null ? 0 : m.lastTime! - m.firstTime },
    gaps: gapFigures(m.gaps),
    disorder: { overall: disorderFigures(m.disorder), sources },
    recommendation,
    simulation,
    state: estimateState(m, recommendation.delayMs, options.bytesPerKey ?? DEFAULT_BYTES_PER_KEY),
  };
  return { advice, sketches: { gaps: m.gaps, disorder: m.disorder } };
}

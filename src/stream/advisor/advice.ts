/** What the advisor answers (./index.ts computes it, ./report.ts renders it). */
import type { DisorderFigures, GapFigures } from "./measure.ts";
import type { QuantileSketch } from "./sketch.ts";
import type { Recommendation, Simulation, StateEstimate } from "./recommend.ts";

export interface Advice {
  events: number;
  distinctKeys: number;
  duplicates: number;
  /** duplicates / events */
  duplicateRate: number;
  skipped: { rows: number; examples: string[] };
  /** rows whose bare-number time, read as ms, is before 2001-09-09: probably seconds (pass unit "s") */
  implausibleTimes: number;
  span: { from: number | null; to: number | null; ms: number };
  /** ms */
  gaps: GapFigures;
  /** ms */
  disorder: { overall: DisorderFigures; sources: Record<string, DisorderFigures> };
  recommendation: Recommendation;
  simulation: Simulation;
  state: StateEstimate;
}

/** Everything `advise` computes, with the sketches for histograms. */
export interface AdviceWithSketches {
  advice: Advice;
  sketches: { gaps: QuantileSketch; disorder: QuantileSketch };
}

import type { BatchCounts } from "./batch";

/** The ingest response body (DESIGN §4), also stored as the batch's recorded outcome. */
export interface BatchOutcome extends BatchCounts {
  batchId: string;
  source: string;
  replayed: boolean;
  /** the watermark this batch was judged by */
  watermark: number;
  /** the global watermark after its commit */
  watermarkAfter: number;
}

/** One entry of /progress, with Spark's state metric names. */
export interface ProgressReport extends Omit<BatchOutcome, "rejected" | "replayed"> {
  rejected: number;
  /** the batch's place in commit order: GET /output?after=<commitSeq> reads what came after it */
  commitSeq: number;
  committedAt: number;
  durationMs: number;
  numRowsTotal: number;
  numRowsUpdated: number;
  numRowsRemoved: number;
  stateBytes: number;
}

export function progressOf(outcome: BatchOutcome, extra: Omit<ProgressReport, keyof BatchOutcome | "rejected">): ProgressReport {
  const { rejected, replayed: _replayed, ...rest } = outcome;
  return { ...rest, rejected: rejected.length, ...extra };
}

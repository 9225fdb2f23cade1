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
  /** present when `rejected` lists only the first MAX_REJECTED_LISTED: the full count */
  rejectedCount?: number;
}

/**
 * A response and a stored record list at most this many rejected rows; the
 * R2 rejected lane has them all. Keeps the record bounded for any maxRows
 * (a Durable Object value is limited to 2 MB).
 */
export const MAX_REJECTED_LISTED = 100;

/** The counts as recorded and answered: the rejected list capped, with the full count when it was cut. */
export function capRejected(counts: BatchCounts): BatchCounts & { rejectedCount?: number } {
  if (counts.rejected.length <= MAX_REJECTED_LISTED) return counts;
  return { ...counts, rejected: counts.rejected.slice(0, MAX_REJECTED_LISTED), rejectedCount: counts.rejected.length };
}

/** How many rows a batch rejected, whether or not its list was capped. */
export function rejectedTotal(o: { rejected: readonly unknown[]; rejectedCount?: number }): number {
  return o.rejectedCount ?? o.rejected.length;
}

/** One entry of /progress, with Spark's state metric names. */
export interface ProgressReport extends Omit<BatchOutcome, "rejected" | "replayed" | "rejectedCount"> {
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
  const { rejected: _list, rejectedCount: _count, replayed: _replayed, ...rest } = outcome;
  return { ...rest, rejected: rejectedTotal(outcome), ...extra };
}

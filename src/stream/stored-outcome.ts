/**
 * What the Coordinator's ledger keeps of a committed batch: enough to answer
 * a replay with the same outcome and to list its progress report. It is one
 * row per request for as long as the stream lives, so it is kept small: a
 * JSON array of the figures, with no field names, and without what the row's
 * own columns hold (source, batch id, commit number). The first layout (an
 * object {outcome, progress}, ~500 bytes for one event) is still read.
 */
import { progressOf, type BatchOutcome, type ProgressReport } from "./batch-outcome";

/** Version 1: [1, watermark, watermarkAfter, input, emitted, duplicates, late, committedAt, durationMs, numRowsTotal, numRowsUpdated, numRowsRemoved, stateBytes, rejected?, rejectedCount?] */
type Compact = [1, number, number, number, number, number, number, number, number, number, number, number, number, ([number, string][] | 0)?, number?];
/** Version 2 (an outcome with conflicts, DESIGN §11): version 1 with conflicts after late. */
type CompactWithConflicts = [2, number, number, number, number, number, number, number, ...(number | [number, string][] | 0)[]];

export interface StoredOutcome {
  outcome: BatchOutcome;
  progress: ProgressReport;
}

export function encodeStoredOutcome(outcome: BatchOutcome, progress: ProgressReport): string {
  const c: Compact = [
    1,
    outcome.watermark,
    outcome.watermarkAfter,
    outcome.input,
    outcome.emitted,
    outcome.duplicates,
    outcome.late,
    progress.committedAt,
    progress.durationMs,
    progress.numRowsTotal,
    progress.numRowsUpdated,
    progress.numRowsRemoved,
    progress.stateBytes,
  ];
  if (outcome.rejected.length > 0 || outcome.rejectedCount !== undefined)
    c.push(outcome.rejected.length > 0 ? outcome.rejected.map((r) => [r.index, r.error]) : 0);
  if (outcome.rejectedCount !== undefined) c.push(outcome.rejectedCount);
  if (outcome.conflicts !== undefined) return JSON.stringify([2, ...c.slice(1, 7), outcome.conflicts, ...c.slice(7)]);
  return JSON.stringify(c);
}

/** The stored record of batch `batchId` from `source`, committed as number `commitSeq`. */
export function decodeStoredOutcome(text: string, source: string, batchId: string, commitSeq: number): StoredOutcome {
  const stored = JSON.parse(text) as Compact | CompactWithConflicts | StoredOutcome;
  if (!Array.isArray(stored)) return stored; // the first layout
  const conflicts = stored[0] === 2 ? { conflicts: stored[7] as number } : {};
  const parsed = (stored[0] === 2 ? [1, ...stored.slice(1, 7), ...stored.slice(8)] : stored) as Compact;
  const [
    ,
    watermark,
    watermarkAfter,
    input,
    emitted,
    duplicates,
    late,
    committedAt,
    durationMs,
    numRowsTotal,
    numRowsUpdated,
    numRowsRemoved,
    stateBytes,
    rejected,
    rejectedCount,
  ] = parsed;
  // The key order of the outcome as first answered, so that a replay is the same JSON.
  const outcome: BatchOutcome = {
    batchId,
    source,
    replayed: false,
    watermark,
    watermarkAfter,
    input,
    emitted,
    duplicates,
    late,
    ...conflicts,
    rejected: rejected ? rejected.map(([index, error]) => ({ index, error })) : [],
    ...(rejectedCount === undefined ? {} : { rejectedCount }),
  };
  return { outcome, progress: progressOf(outcome, { commitSeq, committedAt, durationMs, numRowsTotal, numRowsUpdated, numRowsRemoved, stateBytes }) };
}

/**
 * The records the batch ledger (./ledger.ts) keeps: a batch id's row as read,
 * begin records, and commit records with their layout (the ledger's `groups`
 * rows, and the outbox rows that carry one until their flush).
 */
import type { Lane, LaneKeys } from "../output/sink";
import type { BatchOutcome, ProgressReport } from "../stream/batch-outcome";

/**
 * A batch id as admission and commit read it: committed (seq and report set;
 * the begin figures then 0) or begun and not committed (the watermark, begin
 * time and config version it is judged by; `begun` the record that holds them).
 */
export type BatchRow = {
  body_hash: string;
  watermark: number;
  begun_at: number;
  config_version: number;
  seq: number | null;
  report: string | null;
  begun: string | null;
};

/** A member of a micro-batch as its commit records it. */
export interface CommittedRecord {
  source: string;
  batchId: string;
  identity: string;
  objects: LaneKeys;
  outcome: BatchOutcome;
  report: ProgressReport;
}

/** A member of a micro-batch as its begin record keeps it. */
export interface BegunRecord {
  source: string;
  batchId: string;
  identity: string;
  watermark: number;
  begunAt: number;
  configVersion: number;
}

/** Where a member's record sits in its commit-index entry (memberRecord(); CommittedIds finds it by id). */
export const MEMBER_IDENTITY = 5;
export const MEMBER_REPORT = 6;

/** The lanes whose objects a commit record names (src/coordinator/lane-refs.ts keeps the others). */
export type LedgerLane = Exclude<Lane, "conflicts" | "duplicates">;
export const LANE_INDEX: Record<LedgerLane, number> = { data: 2, late: 3, rejected: 4 };

/** A committed micro-batch's commit record (a `groups` row, or the group columns of its outbox row). */
export interface GroupRecord {
  seq: number;
  firstSeq: number;
  committedAt: number;
  maxEventTime: number | null;
  /** JSON: each member's [source, batchId, data, late, rejected] (trailing nulls trimmed) */
  members: string;
}

/**
 * A member's commit-index entry: [source, batchId, data, late, rejected,
 * identity, report] (entries from before migration 10 stop after the lanes,
 * trailing empty ones trimmed; their records are rows of `batches`). The
 * stored report is JSON already: it goes in as it is, not as a string
 * (`null`: kept apart).
 */
export function memberRecord(m: CommittedRecord, report: string): string {
  const head = JSON.stringify([m.source, m.batchId, m.objects.data, m.objects.late, m.objects.rejected, m.identity]);
  return `${head.slice(0, -1)},${report}]`;
}

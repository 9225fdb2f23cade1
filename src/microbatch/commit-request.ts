/**
 * What running a micro-batch's group asks the Coordinator to commit, per
 * member batch: its counts, the partitions it touched with their new
 * figures, and where its lanes' rows were written.
 */
import type { BatchObservation } from "../stream/advisor/live";
import type { BatchCounts } from "../stream/batch";
import type { LaneKeys } from "../output/sink";
import type { PartitionStats } from "../partition/protocol";

/** A partition's figures as it last reported them; nextExpiry absent: not known, so the eviction fan-out visits it. */
export type ReportedPartition = Omit<PartitionStats, "nextExpiry"> & { p: number; nextExpiry?: number | null };

export interface TouchedPartition extends ReportedPartition {
  inserted: number;
  removed: number;
}

export interface CommitRequest {
  source: string;
  batchId: string;
  maxEventTime: number | null;
  /** the rejected list capped (capRejected) */
  counts: BatchCounts & { rejectedCount?: number };
  /** for the delay advisor's figures */
  seen: BatchObservation;
  touched: TouchedPartition[];
  objects: LaneKeys;
  startedAt: number;
}

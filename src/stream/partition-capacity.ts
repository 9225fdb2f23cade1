/**
 * Whether a stream's partitions are nearing what one Durable Object can
 * hold or serve, and how many partitions it should have (health's
 * `partition-capacity`; PATCH /v1/streams/{stream} {"partitions": N} makes
 * the change on the live stream). Pure: the figures come from the
 * partitions' own reports and the recent progress reports.
 */
import type { ProgressReport } from "./batch-outcome";

/** A Durable Object's SQLite storage limit (PLATFORM.md). */
export const PARTITION_STORAGE_LIMIT = 10 * 1024 ** 3;
/** The largest partition's share of it at which health warns, and at which it is critical. */
export const STORAGE_WARN_SHARE = 0.5;
export const STORAGE_CRITICAL_SHARE = 0.8;
/** Calls a second to one partition at which health warns: one object serves roughly 500–1,000 (docs/SCALING.md). */
export const PARTITION_CALLS_WARN = 500;
/** What a proposed count leaves each partition: room to grow (docs/SCALING.md, "How many partitions"). */
export const TARGET_BYTES_PER_PARTITION = 2.5 * 1024 ** 3;
export const TARGET_CALLS_PER_PARTITION = 200;
/** The most partitions a stream may have (the config's bound). */
export const MAX_PARTITIONS = 1024;

export interface CapacityInput {
  partitions: number;
  /** the largest partition's storage bytes, and all partitions' (during a rescale: both sets') */
  largestBytes: number;
  totalBytes: number;
  /** recent progress reports, oldest first (the health window) */
  window: readonly ProgressReport[];
  now: number;
}

export interface PartitionCapacity {
  partitions: number;
  largestPartitionBytes: number;
  /** calls a second to the busiest partition, at most (each batch its own micro-batch, its keys spread evenly); null: too few commits to tell */
  callsPerSecondEach: number | null;
  /** the partition count to take, when one is nearing a limit; null: none needed */
  proposedPartitions: number | null;
  /** why, when a count is proposed */
  severity: "warn" | "critical" | null;
  detail: string | null;
}

const gb = (n: number) => `${Math.round((n / 1024 ** 3) * 100) / 100} GB`;

/**
 * The calls a second each partition takes, at most: a batch of r rows calls
 * 1 − (1 − 1/P)^r of the partitions on average (micro-batches that coalesce
 * several batches call fewer). Measured from the window's first commit to
 * `now`; null with fewer than 2 commits.
 */
export function callsPerPartition(partitions: number, window: readonly ProgressReport[], now: number): number | null {
  if (window.length < 2) return null;
  const seconds = Math.max(1, now - window[0].committedAt) / 1000;
  const share = window.reduce((sum, p) => sum + (1 - (1 - 1 / partitions) ** Math.max(1, p.input)), 0);
  return share / seconds;
}

export function partitionCapacity(i: CapacityInput): PartitionCapacity {
  const largest = i.largestBytes;
  const total = i.totalBytes;
  const calls = callsPerPartition(i.partitions, i.window, i.now);
  const storageShare = largest / PARTITION_STORAGE_LIMIT;
  const whys: string[] = [];
  if (storageShare >= STORAGE_WARN_SHARE)
    whys.push(`the largest partition holds ${gb(largest)}, ${Math.round(storageShare * 100)}% of a Durable Object's ${gb(PARTITION_STORAGE_LIMIT)}`);
  if (calls !== null && calls >= PARTITION_CALLS_WARN)
    whys.push(`each partition takes up to ${Math.round(calls)} calls a second (one object serves roughly ${PARTITION_CALLS_WARN}–1,000)`);
  const figures = { partitions: i.partitions, largestPartitionBytes: largest, callsPerSecondEach: calls === null ? null : Math.round(calls * 10) / 10 };
  if (whys.length === 0) return { ...figures, proposedPartitions: null, severity: null, detail: null };
  const byBytes = Math.ceil(total / TARGET_BYTES_PER_PARTITION);
  const byCalls = calls !== null && calls >= PARTITION_CALLS_WARN ? fewestFor(i.window, i.now, i.partitions) : 0;
  const proposed = Math.min(MAX_PARTITIONS, Math.max(i.partitions + 1, byBytes, byCalls ?? 0));
  const severity = storageShare >= STORAGE_CRITICAL_SHARE ? "critical" : "warn";
  const onlyCalls = storageShare < STORAGE_WARN_SHARE;
  const change =
    onlyCalls && byCalls === null
      ? "more partitions would not spread them (each batch reaches nearly every partition): send fewer, larger batches"
      : proposed > i.partitions
        ? `take ${proposed} partitions: PATCH /v1/streams/{stream} {"partitions": ${proposed}} (the keys move while the stream runs)`
        : `the stream is at the most partitions there are (${MAX_PARTITIONS}): shorten the watermark delay, or split the stream`;
  const proposes = proposed > i.partitions && !(onlyCalls && byCalls === null);
  return { ...figures, proposedPartitions: proposes ? proposed : null, severity, detail: `${whys.join("; ")}: ${change}` };
}

/**
 * The fewest partitions (above `from`, at most MAX_PARTITIONS) that bring
 * each one's calls down to TARGET_CALLS_PER_PARTITION; null if no count
 * does (batches of many rows reach most partitions however many there are).
 */
function fewestFor(window: readonly ProgressReport[], now: number, from: number): number | null {
  const over = (p: number) => (callsPerPartition(p, window, now) ?? 0) > TARGET_CALLS_PER_PARTITION;
  if (over(MAX_PARTITIONS)) return null;
  let lo = from + 1;
  let hi = MAX_PARTITIONS; // calls per partition fall as the count grows
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (over(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

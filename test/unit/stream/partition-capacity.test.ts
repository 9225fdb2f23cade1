/**
 * Health's partition capacity (src/stream/partition-capacity.ts): a warning
 * from half a Durable Object's storage in one partition, critical from 80%,
 * and from 500 calls a second to each; the count it proposes brings each
 * partition to ~2.5 GB and ~200 calls a second; batches that reach every
 * partition get advice, not a count that would not help.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { ProgressReport } from "../../../src/stream/batch-outcome";
import { evaluateHealth } from "../../../src/stream/health";
import {
  callsPerPartition,
  MAX_PARTITIONS,
  PARTITION_CALLS_WARN,
  PARTITION_STORAGE_LIMIT,
  partitionCapacity,
  TARGET_BYTES_PER_PARTITION,
  TARGET_CALLS_PER_PARTITION,
} from "../../../src/stream/partition-capacity";

const NOW = Date.UTC(2026, 11, 7, 12);
const GB = 1024 ** 3;

/** `n` batches of `rows` rows each, committed evenly over the last `seconds`. */
const batches = (n: number, rows: number, seconds: number): ProgressReport[] =>
  Array.from({ length: n }, (_, i) => ({
    batchId: `b${i}`,
    source: "s",
    watermark: 0,
    watermarkAfter: 0,
    input: rows,
    emitted: rows,
    duplicates: 0,
    late: 0,
    rejected: 0,
    commitSeq: i + 1,
    committedAt: NOW - seconds * 1000 + (i * seconds * 1000) / n,
    durationMs: 1,
    numRowsTotal: 0,
    numRowsUpdated: 0,
    numRowsRemoved: 0,
    stateBytes: 0,
  }));

describe("partitionCapacity", () => {
  test("quiet and small: no reason, no count", () => {
    const c = partitionCapacity({ partitions: 8, largestBytes: GB, totalBytes: 8 * GB, window: batches(100, 1, 10), now: NOW });
    expect(c).toMatchObject({ partitions: 8, largestPartitionBytes: GB, proposedPartitions: null, severity: null, detail: null });
    expect(c.callsPerSecondEach).toBe(1.3); // 100 single-event batches in 10 s over 8 partitions: 1.25, to a tenth
  });

  test("storage: a warning from half the limit, critical from 80%, a count that gives each ~2.5 GB", () => {
    const half = partitionCapacity({ partitions: 8, largestBytes: 5 * GB, totalBytes: 36 * GB, window: [], now: NOW });
    expect(half.severity).toBe("warn");
    expect(half.proposedPartitions).toBe(Math.ceil((36 * GB) / TARGET_BYTES_PER_PARTITION));
    expect(half.detail).toContain(`{"partitions": ${half.proposedPartitions}}`);
    const full = partitionCapacity({ partitions: 8, largestBytes: 0.85 * PARTITION_STORAGE_LIMIT, totalBytes: 9 * GB, window: [], now: NOW });
    expect(full.severity).toBe("critical");
    // One partition far larger than the rest (a hot key range): at least one more, whatever the total says.
    expect(full.proposedPartitions).toBe(9);
    expect(partitionCapacity({ partitions: 8, largestBytes: 0.49 * PARTITION_STORAGE_LIMIT, totalBytes: 30 * GB, window: [], now: NOW }).severity).toBeNull();
  });

  test("calls: single-event webhooks spread over more partitions; 500-row batches reach every partition whatever the count", () => {
    const hooks = batches(100, 1, 0.02); // 5,000 single-event batches a second
    const c = partitionCapacity({ partitions: 8, largestBytes: 0, totalBytes: 0, window: hooks, now: NOW });
    expect(c.callsPerSecondEach!).toBeGreaterThanOrEqual(PARTITION_CALLS_WARN);
    expect(c.severity).toBe("warn");
    const p = c.proposedPartitions!;
    expect(callsPerPartition(p, hooks, NOW)!).toBeLessThanOrEqual(TARGET_CALLS_PER_PARTITION);
    expect(callsPerPartition(p - 1, hooks, NOW)!).toBeGreaterThan(TARGET_CALLS_PER_PARTITION);
    const big = partitionCapacity({ partitions: 8, largestBytes: 0, totalBytes: 0, window: batches(100, 500, 0.1), now: NOW });
    expect(big.severity).toBe("warn");
    expect(big.proposedPartitions).toBeNull();
    expect(big.detail).toContain("larger batches");
  });

  test("never proposes fewer than it has plus one, nor more than the most there are", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: MAX_PARTITIONS }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 50 }),
        (p, share, rate) => {
          const largest = share * PARTITION_STORAGE_LIMIT;
          const c = partitionCapacity({ partitions: p, largestBytes: largest, totalBytes: largest * p, window: batches(50, 1, 1 / rate), now: NOW });
          if (c.proposedPartitions !== null) {
            expect(c.proposedPartitions).toBeGreaterThan(p);
            expect(c.proposedPartitions).toBeLessThanOrEqual(MAX_PARTITIONS);
            expect(c.severity).not.toBeNull();
          }
          if (c.severity === null) expect(c.proposedPartitions).toBeNull();
        },
      ),
    );
  });

  test("health reports it, with the reason", () => {
    const h = evaluateHealth({
      now: NOW,
      mode: "within-watermark",
      policy: "min",
      delay: 60_000,
      hasEventTime: true,
      watermark: 0,
      sources: {},
      progress: [],
      partitions: { count: 4, largestBytes: 6 * GB, totalBytes: 20 * GB },
    });
    expect(h.status).toBe("warn");
    expect(h.reasons.map((r) => r.code)).toEqual(["partition-capacity"]);
    expect(h.partitions).toEqual({ partitions: 4, largestPartitionBytes: 6 * GB, callsPerSecondEach: null, proposedPartitions: 8 });
  });
});

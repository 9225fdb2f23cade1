/**
 * Bench-only, with the operation counters (src/instrument/opcount.ts): where
 * a micro-batch's wall time goes, seen from its Coordinator. The spans are
 * what a request waits for, not CPU: in workerd `Date.now()` moves only
 * across I/O, and each span here ends at I/O (a partition's answer, a
 * storage write's durability, the next request's arrival).
 *
 * - queued: from a request's arrival in the Coordinator to the start of the
 *   micro-batch that takes it (summed over requests);
 * - apply: from the start of a micro-batch to the partitions' last answer
 *   (its begin's write, the partition calls and their writes, R2 if any);
 * - commit: from there to the end of its commit transaction and the alarms
 *   it asks for (the answer's own wait for durability is after this);
 * - between: from the end of one micro-batch to the start of the next one
 *   (waiting for requests, and the coalescing turns), over `gaps` such
 *   gaps; a gap of BETWEEN_MAX_MS or more is a pause in the load, not part
 *   of its cycle, and is left out.
 */
export interface MicroBatchTimes {
  runs: number;
  requests: number;
  queuedMs: number;
  applyMs: number;
  commitMs: number;
  betweenMs: number;
  gaps: number;
}

export const BETWEEN_MAX_MS = 1_000;

export const noMicroBatchTimes = (): MicroBatchTimes => ({ runs: 0, requests: 0, queuedMs: 0, applyMs: 0, commitMs: 0, betweenMs: 0, gaps: 0 });

/** One micro-batch being timed: it says when the partitions have answered and when it has committed. */
export interface RunTimer {
  applied(now?: number): void;
  committed(now?: number): void;
}

/** One per Coordinator: takes arrivals and runs, adds their spans to `into` (the counters' figures). */
export class BatchTimer {
  private readonly arrived = new WeakMap<object, number>();
  private lastEnd: number | null = null;

  constructor(private readonly into: () => MicroBatchTimes) {}

  /** Requests queued now (the objects the micro-batch will hand to run()). */
  submitted(items: readonly object[], now = Date.now()): void {
    for (const item of items) this.arrived.set(item, now);
  }

  /** A micro-batch starts with these items. */
  run(items: readonly object[], now = Date.now()): RunTimer {
    const t = this.into();
    t.runs++;
    t.requests += items.length;
    for (const item of items) t.queuedMs += now - (this.arrived.get(item) ?? now);
    if (this.lastEnd !== null && now - this.lastEnd < BETWEEN_MAX_MS) {
      t.betweenMs += now - this.lastEnd;
      t.gaps++;
    }
    let appliedAt = now;
    return {
      applied: (at = Date.now()) => {
        appliedAt = at;
        this.into().applyMs += at - now;
      },
      committed: (at = Date.now()) => {
        this.into().commitMs += at - appliedAt;
        this.lastEnd = at;
      },
    };
  }

  /** A micro-batch failed: the next one's wait is not counted from an end that did not happen. */
  failed(): void {
    this.lastEnd = null;
  }
}

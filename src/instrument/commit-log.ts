import type { CommitLine } from "../stream/metrics";

/**
 * The pace of the commit log line (src/instrument/observe.ts). Under load a
 * stream commits a micro-batch every few milliseconds; a line for each one
 * costs Workers Logs a billed line apiece (~260 million a month at 100
 * commits/s) and, under `wrangler dev`, a trip through wrangler's inspector
 * that costs more CPU than the commit itself. So by default a stream writes
 * at most one line a second: a commit after a quiet second is written at
 * once, as it was; commits within the second after a line are summed into
 * the next one, written when that second ends. Spark reports progress once
 * per trigger; this is one report per second of triggers. The counters of
 * /metrics and the Analytics Engine data points stay per commit and exact.
 *
 * Pure (no timers, no console): the observer (src/instrument/observe.ts)
 * holds one per Coordinator and writes what it returns.
 */
export const COMMIT_LOG_INTERVAL_MS = 1_000;

/** COMMIT_LOG: "off" (no line), "each" (a line per commit), anything else (a line a second, summed). */
export type CommitLogMode = "summary" | "each" | "off";

export function commitLogMode(value: string | undefined): CommitLogMode {
  return value === "off" || value === "each" ? value : "summary";
}

/** A line that sums one or more commits: `commits` says how many. */
export type SummaryLine = CommitLine & { commits: number };

/** One line for two in a row: figures summed, the watermark before the first and after the last, the longest duration. */
export function mergeLines(a: SummaryLine, b: SummaryLine): SummaryLine {
  return {
    stream: b.stream,
    commits: a.commits + b.commits,
    batches: a.batches + b.batches,
    emitted: a.emitted + b.emitted,
    duplicates: a.duplicates + b.duplicates,
    late: a.late + b.late,
    rejected: a.rejected + b.rejected,
    watermark: a.watermark,
    watermarkAfter: b.watermarkAfter,
    durationMs: Math.max(a.durationMs, b.durationMs),
  };
}

export class CommitLog {
  private held: SummaryLine | null = null;
  private lastAt = -Infinity;

  constructor(private readonly intervalMs = COMMIT_LOG_INTERVAL_MS) {}

  /** A commit's line: what to write now (it, with any held before it), or null: held until dueAt(). */
  add(line: CommitLine, now: number): SummaryLine | null {
    const one: SummaryLine = { ...line, commits: 1 };
    const merged = this.held ? mergeLines(this.held, one) : one;
    if (now - this.lastAt < this.intervalMs) {
      this.held = merged;
      return null;
    }
    this.held = null;
    this.lastAt = now;
    return merged;
  }

  /** When the held line is to be written (null: nothing held). */
  dueAt(): number | null {
    return this.held ? this.lastAt + this.intervalMs : null;
  }

  /** The held line, to write now (null: none); the next second starts now. */
  take(now: number): SummaryLine | null {
    const held = this.held;
    if (!held) return null;
    this.held = null;
    this.lastAt = now;
    return held;
  }
}

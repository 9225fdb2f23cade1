import { commitLine, type CommitLine, type CommittedFigures } from "../stream/metrics";
import { CommitLog, commitLogMode } from "./commit-log";

/**
 * What each micro-batch commit leaves for the operator: a JSON log line
 * (Workers Logs indexes its fields), by default at most one a second with
 * the commits of that second summed (src/instrument/commit-log.ts; COMMIT_LOG
 * = "each": one per commit, "off": none), and, when an ANALYTICS dataset is
 * bound, one data point per commit: index the stream; blob1 the stream;
 * doubles batches, emitted, duplicates, late, rejected, watermark,
 * watermarkAfter, durationMs, in that order.
 */
/** What of the bindings a commit's observation uses (typed by shape: the unit tests run it in Node). */
export interface ObserveEnv {
  ANALYTICS?: { writeDataPoint(point: { indexes: string[]; blobs: string[]; doubles: number[] }): void };
  COMMIT_LOG?: string;
}

/** One per Coordinator: it holds the line of the commits not yet written, and the timer that writes it. */
export class CommitObserver {
  private readonly log = new CommitLog();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly env: ObserveEnv) {}

  commit(stream: string, done: readonly CommittedFigures[], watermark: number, watermarkAfter: number, now = Date.now()): void {
    const line = commitLine(stream, done, watermark, watermarkAfter);
    writePoint(this.env, line);
    const mode = commitLogMode(this.env.COMMIT_LOG);
    if (mode === "off") return;
    if (mode === "each") return void console.log(JSON.stringify(line));
    const write = this.log.add(line, now);
    if (write) console.log(JSON.stringify(write));
    const due = this.log.dueAt();
    // A held line is written when its second ends, whether or not another commit comes. An object evicted
    // before then loses that second's line, never its figures (the counters are in the commit).
    if (due !== null && this.timer === null) this.timer = setTimeout(() => this.flush(), Math.max(0, due - now));
  }

  /** Writes the held line now (the timer; a stream being deleted). */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const held = this.log.take(Date.now());
    if (held) console.log(JSON.stringify(held));
  }
}

/** The commit's Analytics Engine data point, when a dataset is bound. */
function writePoint(env: ObserveEnv, line: CommitLine): void {
  try {
    env.ANALYTICS?.writeDataPoint({
      indexes: [line.stream],
      blobs: [line.stream],
      doubles: [line.batches, line.emitted, line.duplicates, line.late, line.rejected, line.watermark, line.watermarkAfter, line.durationMs],
    });
  } catch (e) {
    // Observability must never fail a commit that has happened.
    console.warn("analytics write failed", e instanceof Error ? e.message : String(e));
  }
}

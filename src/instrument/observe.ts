import { commitLine, type CommittedFigures } from "../stream/metrics";

/**
 * One JSON log line per micro-batch commit (Workers Logs indexes its fields;
 * COMMIT_LOG=off leaves it out: Workers Logs bills per line, and under
 * wrangler dev each line costs the shared thread 5–8% of a webhook's work)
 * and, when an ANALYTICS dataset is bound, one data point: index the stream;
 * blob1 the stream; doubles batches, emitted, duplicates, late, rejected,
 * watermark, watermarkAfter, durationMs, in that order.
 */
/** What of the bindings a commit's observation uses (typed by shape: the unit tests run it in Node). */
export interface ObserveEnv {
  ANALYTICS?: { writeDataPoint(point: { indexes: string[]; blobs: string[]; doubles: number[] }): void };
  COMMIT_LOG?: string;
}

export function observeCommit(env: ObserveEnv, stream: string, done: readonly CommittedFigures[], watermark: number, watermarkAfter: number): void {
  const line = commitLine(stream, done, watermark, watermarkAfter);
  if (env.COMMIT_LOG !== "off") console.log(JSON.stringify(line));
  try {
    env.ANALYTICS?.writeDataPoint({
      indexes: [stream],
      blobs: [stream],
      doubles: [line.batches, line.emitted, line.duplicates, line.late, line.rejected, line.watermark, line.watermarkAfter, line.durationMs],
    });
  } catch (e) {
    // Observability must never fail a commit that has happened.
    console.warn("analytics write failed", e instanceof Error ? e.message : String(e));
  }
}

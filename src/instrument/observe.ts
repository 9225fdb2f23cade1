import type { Env } from "../env";
import { commitLine, type CommittedFigures } from "../stream/metrics";

/**
 * One JSON log line per micro-batch commit (Workers Logs indexes its fields)
 * and, when an ANALYTICS dataset is bound, one data point: index the stream;
 * blob1 the stream; doubles batches, emitted, duplicates, late, rejected,
 * watermark, watermarkAfter, durationMs, in that order.
 */
export function observeCommit(env: Pick<Env, "ANALYTICS">, stream: string, done: readonly CommittedFigures[], watermark: number, watermarkAfter: number): void {
  const line = commitLine(stream, done, watermark, watermarkAfter);
  console.log(JSON.stringify(line));
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

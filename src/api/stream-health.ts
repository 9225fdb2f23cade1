import { coordinatorStub, type Env } from "../env";
import { delayOf } from "../stream/config";
import { DEFAULT_THRESHOLDS, evaluateHealth, type HealthSource } from "../stream/health";
import { watermarkSources } from "../stream/watermark";

/**
 * A stream's health (GET …/health, and the RPC entrypoint's health()): the
 * Coordinator's figures read once, judged by the pure evaluateHealth. Null
 * when the stream does not exist.
 */
export async function streamHealth(env: Env, stream: string) {
  const coordinator = coordinatorStub(env, stream);
  const [d, progress, table] = await Promise.all([
    coordinator.describe(),
    coordinator.progress(DEFAULT_THRESHOLDS.windowBatches),
    coordinator.tablePublishing(),
  ]);
  if (!d) return null;
  const counted = new Set(watermarkSources(d.config, d.sources));
  const sources: Record<string, HealthSource> = {};
  for (const [name, s] of Object.entries(d.sources)) {
    sources[name] = { watermark: s.watermark, lastBatchAt: s.lastBatchAt, idle: s.idle, counted: counted.has(name) && !s.idle, delay: delayOf(d.config, name) };
  }
  const health = evaluateHealth({
    now: Date.now(),
    mode: d.config.mode,
    policy: d.config.watermarkPolicy,
    delay: d.config.watermarkDelay,
    hasEventTime: d.config.eventTime !== null,
    watermark: d.watermark,
    sources,
    progress,
    ...(table ? { table } : {}),
    ...(d.state.unkeyedHashPartitions ? { unkeyedHashPartitions: d.state.unkeyedHashPartitions } : {}),
    ...(d.webhooks ? { webhooks: d.webhooks } : {}),
    partitions: { count: d.config.partitions, largestBytes: d.state.largestPartitionBytes ?? 0, totalBytes: d.state.bytes },
  });
  return { stream, ...health, state: d.state };
}

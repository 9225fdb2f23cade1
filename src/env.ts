import type { ClockRpc } from "./clock/protocol";
import type { CoordinatorRpc } from "./coordinator/protocol";
import type { PartitionRpc } from "./partition/protocol";
import type { RunnerRpc } from "./sources/files/protocol";
import type { RegistryRpc } from "./registry/protocol";
import type { DeliveryLaneRpc, DestinationRpc } from "./delivery/protocol";

// Stubs are typed by each object's RPC interface (its protocol module), never by its class: nothing here imports a Durable Object's module.
/** The Worker's bindings (wrangler.toml) and secrets (.dev.vars / wrangler secret). */
export interface Env {
  COORDINATOR: DurableObjectNamespace<CoordinatorRpc>;
  /** one per stream with several shards: gathers their sources' progress into the global watermark (src/clock) */
  CLOCK: DurableObjectNamespace<ClockRpc>;
  PARTITION: DurableObjectNamespace<PartitionRpc>;
  REGISTRY: DurableObjectNamespace<RegistryRpc>;
  SINK: R2Bucket;
  /** file runs and the record of ingested input objects, one per stream (src/sources/files) */
  RUNNER: DurableObjectNamespace<RunnerRpc>;
  /** the input bucket that runs and R2 event notifications read (src/sources) */
  INPUT: R2Bucket;
  /** the name of INPUT's bucket: event notifications from any other bucket are refused */
  INPUT_BUCKET?: string;
  /** producer of the edge-dedup-events queue (this Worker consumes it: src/sources/queue) */
  EVENTS: Queue;
  /** the dead-letter queue: poison messages go there with their reason */
  DLQ: Queue;
  /** one sender per destination and one index per stream (src/delivery) */
  DESTINATION: DurableObjectNamespace<DestinationRpc>;
  /** a destination's lanes: the senders its rows are spread over (src/delivery/lane.ts) */
  DELIVERY_LANE: DurableObjectNamespace<DeliveryLaneRpc>;
  /** a Queues producer that queue destinations may name (wrangler.toml; more can be added) */
  DELIVERIES?: Queue;
  /** "true" accepts http://127.0.0.1 and http://localhost destinations (local development and tests only) */
  ALLOW_LOOPBACK_DESTINATIONS?: string;
  /**
   * Optional Workers Analytics Engine dataset: one data point per micro-batch
   * commit when bound (README, Operating it); nothing is written without it.
   */
  ANALYTICS?: AnalyticsEngineDataset;
  /** the commit log line (src/instrument/commit-log.ts): "off" none, "each" one per micro-batch commit; otherwise at most one a second, summed */
  COMMIT_LOG?: string;
  ADMIN_TOKEN?: string;
  /** accepted alongside ADMIN_TOKEN while rotating it */
  ADMIN_TOKEN_PREVIOUS?: string;
  /** encrypts sources' signing secrets at rest (at least 32 characters); needed for HMAC credentials */
  CREDENTIALS_KEY?: string;
  /** still opens secrets sealed by the previous CREDENTIALS_KEY while rotating it */
  CREDENTIALS_KEY_PREVIOUS?: string;
  /** "false" refuses deprecated v1 X-Signatures (body-only); accepted otherwise */
  ACCEPT_SIGNATURE_V1?: string;
  /** comma-separated origins allowed by CORS; none when unset */
  CORS_ORIGINS?: string;
}

/** A stream's Coordinator as callers hold it. */
export type CoordinatorStub = DurableObjectStub<CoordinatorRpc>;

/**
 * Partition p of a stream lives in the Durable Object named `{stream}/{p}`;
 * under a later partition map (an online rescale, src/stream/partition-map.ts)
 * in `{stream}/{p}~{version}`, so that no object holds two maps' keys.
 */
export function partitionStub(env: Env, stream: string, p: number, mapVersion = 1): DurableObjectStub<PartitionRpc> {
  return env.PARTITION.getByName(mapVersion === 1 ? `${stream}/${p}` : `${stream}/${p}~${mapVersion}`);
}

/** Shard 0 of a stream (the only one of a stream with one shard) is the Coordinator named `{stream}`; shard k > 0 is `{stream}#{k}` (a stream name has no '#'). */
export function coordinatorStub(env: Env, stream: string, shard = 0): CoordinatorStub {
  return env.COORDINATOR.getByName(shard === 0 ? stream : `${stream}#${shard}`);
}

/** The stream's clock: the one global watermark its shards share (src/clock). */
export function clockStub(env: Env, stream: string): DurableObjectStub<ClockRpc> {
  return env.CLOCK.getByName(stream);
}

export function runnerStub(env: Env, stream: string): DurableObjectStub<RunnerRpc> {
  return env.RUNNER.getByName(stream);
}

export function destinationStub(env: Env, stream: string, name: string): DurableObjectStub<DestinationRpc> {
  return env.DESTINATION.getByName(`${stream}/${name}`);
}

/** Lane `lane` of a destination. */
export function laneStub(env: Env, stream: string, name: string, lane: number): DurableObjectStub<DeliveryLaneRpc> {
  return env.DELIVERY_LANE.getByName(`${stream}/${name}#${lane}`);
}

/** The stream's index of destinations. */
export function destinationIndex(env: Env, stream: string): DurableObjectStub<DestinationRpc> {
  return env.DESTINATION.getByName(stream);
}

/** The one Registry instance: the list of streams. */
export function registryStub(env: Env): DurableObjectStub<RegistryRpc> {
  return env.REGISTRY.getByName("registry");
}

import type { Coordinator } from "./coordinator/coordinator";
import type { Partition } from "./partition/partition";
import type { Runner } from "./sources/files/runner";
import type { Registry } from "./registry/registry";
import type { Destination } from "./delivery/destination";

// The classes' types for stubs (DurableObjectStub<Coordinator>): callers take them from here, not from the Durable Objects' modules.
export type { Coordinator, Destination, Partition, Registry, Runner };

/** The Worker's bindings (wrangler.toml) and secrets (.dev.vars / wrangler secret). */
export interface Env {
  COORDINATOR: DurableObjectNamespace<Coordinator>;
  PARTITION: DurableObjectNamespace<Partition>;
  REGISTRY: DurableObjectNamespace<Registry>;
  SINK: R2Bucket;
  /** file runs and the record of ingested input objects, one per stream (src/sources/files) */
  RUNNER: DurableObjectNamespace<Runner>;
  /** the input bucket that runs and R2 event notifications read (src/sources) */
  INPUT: R2Bucket;
  /** the name of INPUT's bucket: event notifications from any other bucket are refused */
  INPUT_BUCKET?: string;
  /** producer of the edge-dedup-events queue (this Worker consumes it: src/sources/queue) */
  EVENTS: Queue;
  /** the dead-letter queue: poison messages go there with their reason */
  DLQ: Queue;
  /** one sender per destination and one index per stream (src/delivery) */
  DESTINATION: DurableObjectNamespace<Destination>;
  /** a Queues producer that queue destinations may name (wrangler.toml; more can be added) */
  DELIVERIES?: Queue;
  /** "true" accepts http://127.0.0.1 and http://localhost destinations (local development and tests only) */
  ALLOW_LOOPBACK_DESTINATIONS?: string;
  /**
   * Optional Workers Analytics Engine dataset: one data point per micro-batch
   * commit when bound (README, Operating it); nothing is written without it.
   */
  ANALYTICS?: AnalyticsEngineDataset;
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

/** Partition p of a stream lives in the Durable Object named `{stream}/{p}`. */
export function partitionStub(env: Env, stream: string, p: number): DurableObjectStub<Partition> {
  return env.PARTITION.getByName(`${stream}/${p}`);
}

export function coordinatorStub(env: Env, stream: string): DurableObjectStub<Coordinator> {
  return env.COORDINATOR.getByName(stream);
}

export function runnerStub(env: Env, stream: string): DurableObjectStub<Runner> {
  return env.RUNNER.getByName(stream);
}

export function destinationStub(env: Env, stream: string, name: string): DurableObjectStub<Destination> {
  return env.DESTINATION.getByName(`${stream}/${name}`);
}

/** The stream's index of destinations. */
export function destinationIndex(env: Env, stream: string): DurableObjectStub<Destination> {
  return env.DESTINATION.getByName(stream);
}

/** The one Registry instance: the list of streams. */
export function registryStub(env: Env): DurableObjectStub<Registry> {
  return env.REGISTRY.getByName("registry");
}

import type { Coordinator } from "./coordinator";
import type { Partition } from "./partition";

/** The Worker's bindings (wrangler.toml) and secrets (.dev.vars / wrangler secret). */
export interface Env {
  COORDINATOR: DurableObjectNamespace<Coordinator>;
  PARTITION: DurableObjectNamespace<Partition>;
  SINK: R2Bucket;
  ADMIN_TOKEN?: string;
  /** accepted alongside ADMIN_TOKEN while rotating it */
  ADMIN_TOKEN_PREVIOUS?: string;
  /** encrypts sources' signing secrets at rest; needed to create HMAC credentials */
  CREDENTIALS_KEY?: string;
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

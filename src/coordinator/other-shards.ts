import { coordinatorStub, type CoordinatorStub, type Env } from "../env";
import { shardList, shardsOf } from "../stream/shards";
import type { StoredCredential } from "../credentials/credential";
import type { Callers } from "./callers";
import type { Meta } from "./meta";
import type { FailedRun, IngestRequest, IngestResult } from "./protocol";

/** From shard 0: the stream's other shards (none for a stream with one shard, or when called on a shard k > 0, which never fans out). */
export function otherShards(env: Env, meta: Meta): CoordinatorStub[] {
  if (meta.shard !== 0) return [];
  return shardList(shardsOf(meta.config))
    .slice(1)
    .map((k) => coordinatorStub(env, meta.name, k));
}

/**
 * From shard 0: the other shards a credential change reaches. While a change
 * to more shards prepares, the shards it makes too (one not made yet answers
 * "missing": the change copies the credentials it reads once they all exist,
 * ./shard-count.ts).
 */
function credentialShards(env: Env, meta: Meta): CoordinatorStub[] {
  if (meta.shard !== 0) return [];
  const growing = meta.shardChange?.phase === "preparing" ? meta.shardChange.to : 0;
  return shardList(Math.max(shardsOf(meta.config), growing))
    .slice(1)
    .map((k) => coordinatorStub(env, meta.name, k));
}

/** On shard 0: every shard holds the stream's credentials (each checks its batches' callers), so one that could not take it undoes the add. */
export async function addOnEveryShard(
  env: Env,
  meta: Meta | null,
  callers: Callers,
  c: StoredCredential,
): Promise<"added" | "missing" | "duplicate" | "other-provider"> {
  const r = callers.addCredential(c);
  if (r !== "added" || !meta) return r;
  try {
    await Promise.all(credentialShards(env, meta).map((stub) => stub.addCredential(c)));
  } catch (e) {
    await Promise.all([callers.deleteCredential(c.source, c.id), ...credentialShards(env, meta).map((stub) => stub.deleteCredential(c.source, c.id))]);
    throw e;
  }
  return r;
}

/** On shard 0: a credential deleted on the other shards, then here. */
export async function deleteOnEveryShard(env: Env, meta: Meta | null, callers: Callers, source: string, id: string): Promise<boolean> {
  await Promise.all((meta ? credentialShards(env, meta) : []).map((stub) => stub.deleteCredential(source, id)));
  return callers.deleteCredential(source, id);
}

/** A batch id moved here by shard changes: the answer of the first of these shards (newest count first) that knows it; null: none does. */
export async function recalled(
  env: Env,
  stream: string,
  shards: readonly number[],
  req: IngestRequest,
  deadline: number,
): Promise<IngestResult | FailedRun | null> {
  for (const k of shards) {
    const was = await coordinatorStub(env, stream, k).recall(req, deadline);
    if (was.kind !== "unknown") return was;
  }
  return null;
}

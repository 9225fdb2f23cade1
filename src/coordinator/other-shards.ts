import { coordinatorStub, type CoordinatorStub, type Env } from "../env";
import { shardList, shardsOf } from "../stream/shards";
import type { Meta } from "./meta";

/** From shard 0: the stream's other shards (none for a stream with one shard, or when called on a shard k > 0, which never fans out). */
export function otherShards(env: Env, meta: Meta): CoordinatorStub[] {
  if (meta.shard !== 0) return [];
  return shardList(shardsOf(meta.config))
    .slice(1)
    .map((k) => coordinatorStub(env, meta.name, k));
}

import { coordinatorStub, type CoordinatorStub, type Env } from "../env";
import type { FailedRun, IngestRequest, IngestResult, WrongShard } from "../coordinator/protocol";
import { shardFor } from "../stream/shards";

/** The last count of shards this isolate heard per stream (an admission, or a shard's "moved"); a stale one costs a call, never a wrong verdict. */
const heard = new Map<string, number>();
const HEARD_MAX = 10_000;

/** What this isolate last heard of a stream's shards (1: nothing). */
export function heardShards(stream: string): number {
  return heard.get(stream) ?? 1;
}

/** An admission said how many shards the stream has. */
export function hearShards(stream: string, shards: number): void {
  if (heard.get(stream) === shards) return;
  if (heard.size >= HEARD_MAX) heard.clear();
  if (shards > 1) heard.set(stream, shards);
  else heard.delete(stream);
}

/**
 * Routes a stream's batches to the shards that judge them (src/stream/shards.ts):
 * one call per shard touched, the answers in the order asked. A shard that
 * does not judge a batch (the count here was stale) says how many shards
 * there are, and the batch goes again to the right one; a shard beyond the
 * stream's (it was created again with fewer) is asked of shard 0.
 */
export class ShardRouter {
  private stubs = new Map<number, CoordinatorStub>();

  constructor(
    private readonly env: Env,
    readonly stream: string,
    /** shard 0's stub when the caller has one (each stub made costs a lookup) */
    first?: CoordinatorStub,
  ) {
    if (first) this.stubs.set(0, first);
  }

  /** The stub of the shard that judges `batchId` as far as this isolate knows. */
  stubFor(batchId: string): CoordinatorStub {
    return this.stub(shardFor(batchId, heardShards(this.stream)));
  }

  knownBatch(source: string, batchId: string): Promise<boolean> {
    return this.stubFor(batchId).knownBatch(source, batchId);
  }

  async ingestMany(reqs: readonly IngestRequest[]): Promise<(IngestResult | FailedRun)[]> {
    const answers = new Array<IngestResult | FailedRun>(reqs.length);
    let todo = reqs.map((_, i) => i);
    for (let round = 0; todo.length > 0; round++) {
      const shards = heardShards(this.stream);
      const byShard = new Map<number, number[]>();
      for (const i of todo) {
        const k = shardFor(reqs[i].batchId, shards);
        byShard.set(k, [...(byShard.get(k) ?? []), i]);
      }
      const again: number[] = [];
      await Promise.all(
        [...byShard].map(async ([k, idx]) => {
          const got: (IngestResult | FailedRun | WrongShard)[] = await this.stub(k).ingestMany(idx.map((i) => reqs[i]));
          got.forEach((a, j) => {
            const i = idx[j];
            if (a.kind === "moved" || (a.kind === "missing" && k > 0)) {
              hearShards(this.stream, a.kind === "moved" ? a.shards : 1);
              if (round < 2) return void again.push(i);
              answers[i] = { kind: "failed", message: "the stream's shards changed while the batch was routed: retry", retryAfterMs: 1_000 };
              return;
            }
            answers[i] = a;
          });
        }),
      );
      todo = again;
    }
    return answers;
  }

  private stub(k: number): CoordinatorStub {
    let s = this.stubs.get(k);
    if (!s) this.stubs.set(k, (s = coordinatorStub(this.env, this.stream, k)));
    return s;
  }
}

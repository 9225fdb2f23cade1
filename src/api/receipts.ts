import { parseBatchKey } from "../stream/batch-key";
import type { CoordinatorStub } from "../env";
import type { StreamConfig } from "../stream/config";
import { intakeShardsOf } from "../stream/shards";
import { shardsHolding, type ShardChange } from "../stream/shard-change";
import { receiptOf, type Receipt, type StoredReceipt } from "../stream/receipt";

/**
 * The state reader's answer for a row (DESIGN §11): each remembered entry
 * with its kept copy's commit number, which the Coordinator's ledger holds
 * (a partition learns none: it decides before the commit).
 */
export async function withReceipts(
  shardStub: (shard: number) => CoordinatorStub,
  config: StreamConfig,
  shardChange: ShardChange | null,
  entries: readonly StoredReceipt[],
): Promise<Receipt[]> {
  const seqs = await Promise.all(
    entries.map(async (e) => {
      if (e.batch === null) return null;
      const { source, batchId } = parseBatchKey(e.batch);
      // The shard that judged the batch holds its commit number (a stream with one shard: the one; after shard changes, one of the shards it lay with).
      for (const k of shardsHolding(batchId, intakeShardsOf(config), shardChange, Date.now())) {
        const seq = await shardStub(k).committedSeq(source, batchId);
        if (seq !== null) return seq;
      }
      return null;
    }),
  );
  return entries.map((e, i) => receiptOf(config, e, () => seqs[i]));
}

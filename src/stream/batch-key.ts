/**
 * A batch's key within a stream: its source and batch id, `{source}\n{batchId}`
 * (a source name, NAME_PATTERN in src/stream/config.ts, holds no newline). The Coordinator's leases, in-flight
 * runs and id index, a micro-batch's members and the partitions' ledger
 * entries and receipts all name a batch by it. Pure.
 */
export const batchKey = (source: string, batchId: string): string => `${source}\n${batchId}`;

/** A batch key's source and batch id. */
export function parseBatchKey(key: string): { source: string; batchId: string } {
  const at = key.indexOf("\n");
  return { source: key.slice(0, at), batchId: key.slice(at + 1) };
}

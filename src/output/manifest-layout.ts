/** Where the committed manifest's entries are in R2 (src/output/publisher.ts writes them, ./reader.ts reads them). */

/** Zero-padded so that listing the prefix returns entries in commit order. */
export function manifestKey(stream: string, epoch: string, toSeq: number, shard = 0): string {
  return `${manifestFolder(stream, epoch, shard)}${String(toSeq).padStart(12, "0")}.json`;
}

/** Where a shard's manifest entries are: shard 0's (a stream with one shard: the only) in the epoch's folder, shard k's beside it (its numbers are longer, and listing one folder must give one shard's entries in order). */
export function manifestFolder(stream: string, epoch: string, shard: number): string {
  return `streams/${stream}/_manifest/${epoch}${shard === 0 ? "" : `.shard-${shard}`}/`;
}

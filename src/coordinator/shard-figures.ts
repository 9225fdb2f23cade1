import type { ProgressReport } from "../stream/batch-outcome";
import { mergeSources } from "../stream/shard-watermark";
import type { SourceProgress } from "../stream/watermark";
import type { Counter } from "./counters";
import type { ShardFigures } from "./protocol";
import type { CoordinatorStores } from "./stores";

export type { ShardFigures };

export function shardFiguresOf(s: CoordinatorStores): ShardFigures | null {
  const meta = s.meta();
  if (!meta) return null;
  return {
    shard: meta.shard,
    sources: s.sourceProgress(),
    counters: s.counters.all(),
    committed: s.ledger.commitCount(),
    lastSeq: s.ledger.lastSeq(),
    published: { manifest: s.metaStore.published("manifest"), table: s.metaStore.published("table") },
    bytes: s.storage.sql.databaseSize,
    batchesRemembered: s.ledger.remembered(),
    watermark: meta.watermark,
    state: s.partitions.totals(),
  };
}

/** The stream's figures over its shards: counters summed, sources merged (each source's largest progress). */
export function mergeShardFigures(list: readonly ShardFigures[]): {
  sources: Record<string, SourceProgress>;
  counters: Counter[];
  committed: number;
  bytes: number;
  batchesRemembered: number;
  state: { rows: number; bytes: number };
} {
  const counters = new Map<string, Counter>();
  for (const f of list) {
    for (const c of f.counters) {
      const k = `${c.name}\n${c.source}`;
      const cur = counters.get(k);
      if (cur) cur.n += c.n;
      else counters.set(k, { ...c });
    }
  }
  const sum = (pick: (f: ShardFigures) => number) => list.reduce((a, f) => a + pick(f), 0);
  // Each shard's partition figures are as its own calls last saw them: the largest is the freshest.
  const state = list.reduce((a, f) => (f.state.rows > a.rows ? f.state : a), { rows: 0, bytes: 0 });
  return {
    sources: mergeSources(list.map((f) => ({ sources: f.sources, pending: {} }))),
    counters: [...counters.values()],
    committed: sum((f) => f.committed),
    bytes: sum((f) => f.bytes),
    batchesRemembered: sum((f) => f.batchesRemembered),
    state,
  };
}

/** The most recent `limit` progress reports over every shard, oldest first (by commit time, then shard and commit number). */
export function mergeProgress(lists: readonly ProgressReport[][], limit: number): ProgressReport[] {
  return lists
    .flat()
    .sort((a, b) => a.committedAt - b.committedAt || a.commitSeq - b.commitSeq)
    .slice(-limit);
}

import type { TablePublishing } from "../output/publisher";
import type { ProgressReport } from "../stream/batch-outcome";
import { seqBase } from "../stream/shards";
import { mergeSources } from "../stream/shard-watermark";
import type { SourceProgress } from "../stream/watermark";
import type { Counter } from "./counters";
import type { ShardFigures, StreamPublication } from "./protocol";
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

/** The table's publication over every shard: commits counted from each shard's base, failing if any shard's appends are (the latest failure told). */
export function mergeTablePublishing(list: readonly { shard: number; value: TablePublishing }[]): TablePublishing {
  if (list.length === 1) return list[0].value;
  const count = (pick: (p: TablePublishing) => number) => list.reduce((a, { shard, value }) => a + pick(value) - seqBase(shard), 0);
  const failing = list.map((l) => l.value).filter((p) => p.failing);
  const last = failing.sort((a, b) => (b.lastErrorAt ?? 0) - (a.lastErrorAt ?? 0))[0];
  return {
    publishedSeq: count((p) => p.publishedSeq),
    committedSeq: count((p) => p.committedSeq),
    failing: failing.length > 0,
    failures: Math.max(...list.map((l) => l.value.failures)),
    lastError: last?.lastError ?? null,
    lastErrorAt: last?.lastErrorAt ?? null,
    nextAttemptAt: last?.nextAttemptAt ?? null,
  };
}

/** How far the output is published over every shard: commits counted from each shard's base, and each shard's own numbers (what a wait must compare). */
export function mergePublication(list: readonly { shard: number; value: StreamPublication }[]): StreamPublication {
  if (list.length === 1) return list[0].value;
  const count = (pick: (p: StreamPublication) => number) => list.reduce((a, { shard, value }) => a + pick(value) - seqBase(shard), 0);
  const table = list.every((l) => l.value.table !== null);
  return {
    epoch: list[0].value.epoch,
    committed: count((p) => p.committed),
    manifest: count((p) => p.manifest),
    table: table ? count((p) => p.table!) : null,
    shards: list.map(({ value: p }) => ({ committed: p.committed, manifest: p.manifest, table: p.table })),
  };
}

/**
 * The global watermark of a stream with several ingest shards (DESIGN §12),
 * from what each shard last reported: a source's max event time is the
 * largest any shard reports, and the watermark is still min/max over the
 * sources, never decreasing. It may lag the true one (a report is up to an
 * interval old) but is never ahead of it:
 * - a source a shard is about to commit for the first time is reported
 *   before that commit ("pending", with its planned max): it counts as soon
 *   as it might have spoken, so a min can only be lower for it, and a max is
 *   taken without it until its commit is reported;
 * - a source turns idle an interval later than its own idle timeout says,
 *   since a shard's latest batches may not be reported yet.
 */
import type { StreamConfig } from "./config";
import { globalWatermark, type SourceProgress } from "./watermark";
import { own } from "../lib/own";

export interface ShardSources {
  /** the shard's committed progress per source */
  sources: Record<string, SourceProgress>;
  /** sources in a micro-batch it is committing that its committed progress does not hold yet: their planned max event time */
  pending: Record<string, number | null>;
}

/** Per source, the largest max event time and the latest batch any shard reported (committed only). */
export function mergeSources(reports: Iterable<ShardSources>): Record<string, SourceProgress> {
  const out: Record<string, SourceProgress> = {};
  for (const r of reports) {
    for (const [name, p] of Object.entries(r.sources)) {
      const cur = own(out, name);
      out[name] = cur
        ? { maxEventTime: maxOf(cur.maxEventTime, p.maxEventTime), lastBatchAt: maxOf(cur.lastBatchAt, p.lastBatchAt) }
        : { maxEventTime: p.maxEventTime, lastBatchAt: p.lastBatchAt };
    }
  }
  return out;
}

/** The global watermark over the shards' reports at `now`, never below `previous`; `lagMs`: how old a report may be. */
export function shardedWatermark(config: StreamConfig, reports: readonly ShardSources[], previous: number, now: number, lagMs: number): number {
  const committed = mergeSources(reports);
  const withPending: Record<string, SourceProgress> = { ...committed };
  for (const r of reports) {
    for (const [name, max] of Object.entries(r.pending)) {
      if (own(committed, name) || max === null) continue;
      const cur = own(withPending, name);
      withPending[name] = { maxEventTime: cur ? Math.min(cur.maxEventTime ?? max, max) : max, lastBatchAt: now };
    }
  }
  const judgedAt = now - lagMs;
  return Math.min(globalWatermark(config, committed, previous, judgedAt), globalWatermark(config, withPending, previous, judgedAt));
}

/**
 * The sources the clock knows of: declared, committed anywhere, and (with
 * `pending`) about to be. What a shard is told it need not report first
 * leaves the pending out: a batch that was pending may fail and never commit.
 */
export function knownSources(config: StreamConfig, reports: readonly ShardSources[], pending = true): string[] {
  const names = new Set(Object.keys(config.sources));
  for (const r of reports) for (const n of [...Object.keys(r.sources), ...(pending ? Object.keys(r.pending) : [])]) names.add(n);
  return [...names].sort();
}

/**
 * What a shard reports before a commit: each source of its members that the
 * clock does not know yet (`known`), with the least of their planned max
 * event times (a min is then never above what commits).
 */
export function pendingSources(
  members: readonly { source: string; maxEventTime: number | null }[],
  known: (source: string) => boolean,
): Record<string, number | null> {
  const pending: Record<string, number | null> = {};
  for (const m of members) {
    if (known(m.source)) continue;
    pending[m.source] = Object.hasOwn(pending, m.source) ? minOf(pending[m.source], m.maxEventTime) : m.maxEventTime;
  }
  return pending;
}

/** `pick` over two figures, either of which may be null (unknown): the other one then. */
const nullable =
  (pick: (a: number, b: number) => number) =>
  (a: number | null, b: number | null): number | null =>
    a === null ? b : b === null ? a : pick(a, b);
const maxOf = nullable(Math.max);
const minOf = nullable(Math.min);

import type { CommitRequest, TouchedPartition } from "./commit-request";
import { armFault, failAt, groupFaultKey, partitionFaultKey, takeGroupFault } from "../instrument/faults";
import type { GroupApplyRequest, GroupApplyResult, MovedKey, RowColumns } from "../partition/protocol";
import type { DedupSettings } from "../stream/dedup";
import { OUTBOX_MAX_ENTRY_BYTES } from "../output/outbox";
import { LANES, writeGroup, type Lane, type LaneKeys } from "../output/sink";
import { dedupSettings, encodeDropped, encodeLate, encodeOutput, encodeRejected, mergeDecisions, planBatch } from "../stream/batch";
import type { StreamConfig } from "../stream/config";
import { batchKey } from "../stream/batch-key";
import { capRejected } from "../stream/batch-outcome";
import { concatParts, formatRef, type ByteRange } from "../output/object-ref";
import { keptSeqOf, memberDecisions, partitionPayloads } from "./group";

/** A request in a micro-batch, begun: what it was judged by is fixed at its first attempt. */
export interface BegunMember {
  source: string;
  batchId: string;
  rows: readonly unknown[];
  /** the watermark, begin time and config of its first attempt (a retry keeps them) */
  watermark: number;
  begunAt: number;
  config: StreamConfig;
  /** a retry of an attempt that failed before its commit: partitions may hold some of its decisions */
  resumed: boolean;
  /** a stream with a table: the columns known before it began (src/table/known-columns.ts) */
  tableColumns?: readonly string[];
}

export interface GroupContext {
  /** the micro-batch's id: its begin record and its partitions' decision entries go by it */
  group?: string;
  stream: string;
  epoch: string;
  /** the global watermark in force when the group began */
  watermark: number;
  applyGroup(p: number, req: GroupApplyRequest): Promise<GroupApplyResult>;
  /**
   * The partition map's count, which routes every member whatever config it
   * began under (a rescale between a member's attempts moves its rows; the
   * decisions the old partitions recorded went with them)
   */
  partitions: number;
  /** during a rescale: the keys of partition p's rows that old partitions still hold (their peek), for its call */
  inherited?(p: number, entries: readonly { settings: DedupSettings; rows: RowColumns }[]): Promise<MovedKey[]>;
  bucket: R2Bucket;
  /** ledgers of committed batches that partition p may drop, taken (the next call to p carries them) */
  takeForget(p: number): string[];
  /** a kept copy's commit number, if its batch has committed (absent: unknown) */
  committedSeq?(source: string, batchId: string): number | null;
  /** the commit number the group's first member will take (its members take the next ones, in order); the commit checks it */
  firstSeq?: number;
}

/** What a micro-batch hands to its commit: each member's commit request and, for a small group, its lanes for the outbox. */
export interface GroupResult {
  /** the commit requests of the members that were planned (all but `failed`), in order */
  commits: CommitRequest[];
  /** set when the group wrote no objects: its lanes and each member's byte range per lane (the commit appends them to the outbox) */
  outbox: { lanes: Record<Lane, Uint8Array>; ranges: Record<Lane, (ByteRange | null)[]> } | null;
  /** the table columns the members' accepted rows add (none without a table) */
  columns: string[];
  /** the members (by position) whose planning threw, with what it threw: they are in no commit request, and nothing holds anything of them */
  failed: ReadonlyMap<number, unknown>;
}

/**
 * Runs a micro-batch up to its commit: plans each member, makes one call per
 * touched partition for the whole group, writes one object per lane and one
 * marker, and returns each planned member's commit request. A member whose
 * planning throws fails alone; any later failure fails the group, and every
 * member's retry resumes on its own, in whatever group it lands.
 */
export async function runGroup(ctx: GroupContext, members: readonly BegunMember[]): Promise<GroupResult> {
  const startedAt = Date.now();
  // Tests only: a crash point armed for a member (src/instrument/faults.ts) fails the group there.
  const fault = takeGroupFault(ctx.stream, members);
  // Each member is planned on its own: one that throws (a row no check foresaw) fails alone, before any partition
  // or object holds anything of it, and the others run and commit without it.
  const failed = new Map<number, unknown>();
  const planned = members.flatMap((m, i) => {
    try {
      const context = { source: m.source, batchId: m.batchId, watermark: m.watermark, ...(m.tableColumns ? { tableColumns: m.tableColumns } : {}) };
      const routed = m.config.partitions === ctx.partitions ? m.config : { ...m.config, partitions: ctx.partitions };
      return [{ ...m, ledger: batchKey(m.source, m.batchId), plan: planBatch(routed, m.rows, m.begunAt, context) }];
    } catch (e) {
      failed.set(i, e);
      return [];
    }
  });
  if (planned.length === 0) return { commits: [], outbox: null, columns: [], failed };
  const byLedger = new Map(planned.map((m) => [m.ledger, m]));

  const results = new Map<number, GroupApplyResult>();
  await Promise.all(
    [...partitionPayloads(planned)].map(async ([p, entries], i) => {
      const forget = ctx.takeForget(p);
      // Tests only: the first partition called stores half of its first entry, then fails.
      if (fault === "partition-midway" && i === 0) armFault(partitionFaultKey(ctx.epoch, entries[0].batch), fault);
      const calls = entries.map((e) => {
        const m = byLedger.get(e.batch)!;
        return { ...e, settings: dedupSettings(m.config), resumed: m.resumed };
      });
      const inherited = ctx.inherited ? await ctx.inherited(p, calls) : [];
      const r = await ctx.applyGroup(p, {
        epoch: ctx.epoch,
        watermark: ctx.watermark,
        ...(ctx.group ? { group: ctx.group } : {}),
        entries: calls,
        ...(forget.length > 0 ? { forget } : {}),
        ...(inherited.length > 0 ? { inherited } : {}),
      });
      results.set(p, r);
    }),
  );
  const decided = memberDecisions(planned, new Map([...results].map(([p, r]) => [p, r.decisions])));
  // The delay advisor's gaps (a partition of an older release reports none).
  const gaps = memberDecisions(planned, new Map([...results].map(([p, r]) => [p, r.gaps ?? r.decisions.map((): number[] => [])])));
  // The kept copies of conflicts (and of duplicates, with keepDuplicates), by partition and position.
  const keptBy = memberDecisions(planned, new Map([...results].map(([p, r]) => [p, r.kept ?? r.decisions.map(() => [])])));
  // A kept copy in this group (this member's own batch, or one before it) commits with it: its number is known now.
  const seqOf = keptSeqOf(planned, ctx.firstSeq, (source, batchId) => ctx.committedSeq?.(source, batchId) ?? null);
  const merged = planned.map((m, i) =>
    mergeDecisions(m.plan, decided[i], new Map([...keptBy[i]].map(([p, k]) => [p, new Map(k.map((x) => [x.at, x.batch]))])), {
      source: m.source,
      batchId: m.batchId,
      seqOf,
    }),
  );
  failAt(fault, "after-decide");

  const judgedBy = (p: number) => results.get(p)!.watermark;
  const parts = {
    data: merged.map((x) => encodeOutput(x.emitted)),
    late: merged.map((x, i) => encodeLate({ source: planned[i].source, batchId: planned[i].batchId }, x.late, judgedBy)),
    rejected: merged.map((x, i) => encodeRejected({ source: planned[i].source, batchId: planned[i].batchId }, x.counts.rejected, planned[i].rows)),
    conflicts: merged.map((x, i) => encodeDropped({ source: planned[i].source, batchId: planned[i].batchId }, x.dropped, "conflicts")),
    duplicates: merged.map((x, i) =>
      planned[i].config.keepDuplicates ? encodeDropped({ source: planned[i].source, batchId: planned[i].batchId }, x.dropped, "duplicates") : "",
    ),
  };
  const lanes = Object.fromEntries(LANES.map((lane) => [lane, concatParts(parts[lane])])) as Record<Lane, ReturnType<typeof concatParts>>;
  const bodies = Object.fromEntries(LANES.map((lane) => [lane, lanes[lane].body])) as Record<Lane, Uint8Array>;
  const size = LANES.reduce((n, lane) => n + bodies[lane].length, 0);
  const direct = size > OUTBOX_MAX_ENTRY_BYTES;
  const group = ctx.group ?? `g-${crypto.randomUUID()}`;
  // A small group writes nothing to R2 here: its lanes go into the outbox in the commit's transaction,
  // so the crash points before the commit all leave the same thing behind: nothing.
  if (direct) armFault(groupFaultKey(group), fault === "after-data" ? fault : null); // sink.ts fails between the lanes and the marker
  const objects: LaneKeys = !direct
    ? { data: null, late: null, rejected: null, conflicts: null, duplicates: null }
    : await writeGroup(ctx.bucket, { stream: ctx.stream, epoch: ctx.epoch, group }, bodies, {
        stream: ctx.stream,
        group,
        watermark: ctx.watermark,
        batches: planned.map((m, i) => ({
          source: m.source,
          batchId: m.batchId,
          watermark: m.watermark,
          emitted: merged[i].counts.emitted,
          late: merged[i].counts.late,
          rejected: merged[i].counts.rejected.length,
        })),
      });
  if (!direct) failAt(fault, "after-data");
  failAt(fault, "after-marker");

  // A partition's removals are reported once, with the first member that touched it.
  const reported = new Set<number>();
  const commits = planned.map((m, i): CommitRequest => {
    const touched: TouchedPartition[] = [...m.plan.subBatches.keys()].map((p) => {
      const r = results.get(p)!;
      const first = !reported.has(p);
      reported.add(p);
      const inserted = [...decided[i].get(p)!].filter((d) => d === "e").length;
      return { p, rows: r.rows, bytes: r.bytes, watermark: r.watermark, nextExpiry: r.nextExpiry, inserted, removed: first ? r.removed : 0 };
    });
    const refs = {} as LaneKeys;
    for (const lane of LANES) {
      const key = objects[lane];
      const range = lanes[lane].ranges[i];
      refs[lane] = key && range ? formatRef({ key, range }) : null;
    }
    return {
      source: m.source,
      batchId: m.batchId,
      maxEventTime: merged[i].maxEventTime,
      counts: capRejected(merged[i].counts),
      seen: { times: m.plan.eventTimes, gaps: [...gaps[i].values()].flat() },
      touched,
      objects: refs,
      startedAt,
    };
  });
  const ranges = Object.fromEntries(LANES.map((lane) => [lane, lanes[lane].ranges])) as Record<Lane, (ByteRange | null)[]>;
  return { commits, outbox: direct ? null : { lanes: bodies, ranges }, columns: [...new Set(planned.flatMap((m) => m.plan.newColumns ?? []))], failed };
}

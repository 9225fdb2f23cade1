/**
 * A micro-batch's commit, planned without storage (no Cloudflare imports):
 * given what each member's ledger row says, the watermark state and the
 * commit requests, what the commit writes — the watermark and source
 * progress, each member's outcome, progress report and commit record, the
 * partitions' last figures, the advisor's observations and the /metrics
 * deltas. The Coordinator applies the plan in one transaction
 * (src/coordinator/coordinator.ts); a failure there leaves nothing behind.
 */
import type { StreamConfig } from "../stream/config";
import type { BatchCounts } from "../stream/batch";
import { metricDeltas, type CommittedFigures } from "../stream/metrics";
import { capRejected, progressOf, rejectedTotal, type BatchOutcome, type ProgressReport } from "../stream/batch-outcome";
import { advanceWatermark, type SourceProgress, type WatermarkState } from "../stream/watermark";
import { own } from "../lib/own";
import type { ByteRange } from "../output/object-ref";
import { outboxRef } from "../output/object-ref";

/** Where a member's rows are, per lane (the Coordinator's LaneKeys). */
export type Objects = Record<string, string | null>;

/** What the plan reads of a commit request (src/microbatch/commit-request.ts's CommitRequest is one). */
export interface PlannedRequest<O extends Objects = Objects> {
  source: string;
  batchId: string;
  maxEventTime: number | null;
  counts: BatchCounts & { rejectedCount?: number };
  touched: { p: number; rows: number; bytes: number; inserted: number; removed: number }[];
  objects: O;
  startedAt: number;
}

/** A member's ledger row as the commit reads it (a micro-batch's members: their begin record; src/coordinator/ledger.ts's BatchRow is one). */
export interface MemberRow {
  body_hash: string;
  watermark: number;
  seq: number | null;
  report: string | null;
}

/** A member committed now, as the ledger records it (src/coordinator/ledger.ts's CommittedRecord). */
export interface PlannedRecord<O extends Objects = Objects> {
  source: string;
  batchId: string;
  identity: string;
  objects: O;
  outcome: BatchOutcome;
  report: ProgressReport;
}

export interface CommitInput<O extends Objects, R extends PlannedRequest<O>> {
  config: StreamConfig;
  now: number;
  /** the watermark in force and each source's progress */
  state: WatermarkState;
  /** the last commit number */
  lastSeq: number;
  reqs: readonly R[];
  rows: readonly MemberRow[];
  /** each partition's last [rows, bytes] (the state totals of the reports count the ones touched now instead) */
  figures: ReadonlyMap<number, { rows: number; bytes: number }>;
  /** a small micro-batch: the outbox entry its lanes become, and each member's ranges in them */
  outbox?: { entry: number; ranges: Record<keyof O & string, (ByteRange | null)[]> } | null;
  /** a committed member's recorded outcome (the ledger decodes it) */
  recorded(row: MemberRow, source: string, batchId: string): BatchOutcome;
  /** a shard of a stream with several: the watermark is the stream's clock's (src/coordinator/clock-link.ts), which its sources here alone may be ahead of */
  sharded?: boolean;
}

export interface CommitPlan<O extends Objects, R extends PlannedRequest<O>> {
  /** each member's answer, in order */
  outcomes: BatchOutcome[];
  watermark: number;
  sources: Record<string, SourceProgress>;
  /** whether anything is committed now (members all committed before: nothing to write) */
  fresh: boolean;
  /** the members committed now, from commit number `firstSeq` on */
  firstSeq: number;
  records: PlannedRecord<O>[];
  /** the largest event time of the rows committed now (null: none) */
  maxEventTime: number | null;
  /** the group's last figures per partition */
  partitions: R["touched"][number][];
  /** for the delay advisor: each member committed now with its source's largest event time before it */
  observations: { req: R; maxBefore: number | null }[];
  /** the /metrics deltas and the figures they come from */
  counters: [string, string, number][];
  done: CommittedFigures[];
}

export function planCommit<O extends Objects, R extends PlannedRequest<O>>(input: CommitInput<O, R>): CommitPlan<O, R> {
  const { config, now, reqs, rows } = input;
  let state = input.state;
  const observations: CommitPlan<O, R>["observations"] = [];
  const freshReqs = reqs.filter((_, i) => rows[i].seq === null);
  for (const r of freshReqs) {
    observations.push({ req: r, maxBefore: own(state.sources, r.source)?.maxEventTime ?? null });
    state = advanceWatermark(config, state, r.source, r.maxEventTime, now);
  }
  if (input.sharded) state = { ...state, watermark: input.state.watermark };
  // The group's last figures per partition (members list them in the order they were decided).
  const latest = new Map<number, R["touched"][number]>(freshReqs.flatMap((r) => r.touched.map((t) => [t.p, t] as const)));
  const after = new Map<number, { rows: number; bytes: number }>(input.figures);
  for (const [p, t] of latest) after.set(p, t);
  const totals = { rows: 0, bytes: 0 };
  for (const f of after.values()) (totals.rows += f.rows), (totals.bytes += f.bytes);
  const box = input.outbox;
  const objectsOf = (req: R, i: number): O => {
    if (!box) return req.objects;
    const objects = { ...req.objects };
    for (const lane of Object.keys(box.ranges) as (keyof O & string)[]) {
      const range = box.ranges[lane][i];
      objects[lane] = (range ? outboxRef(box.entry, lane, range) : null) as O[keyof O & string];
    }
    return objects;
  };
  let seq = input.lastSeq;
  const records: PlannedRecord<O>[] = [];
  const done: CommittedFigures[] = [];
  const outcomes = reqs.map((req, i): BatchOutcome => {
    const row = rows[i];
    if (row.seq !== null) return input.recorded(row, req.source, req.batchId);
    seq += 1;
    const outcome: BatchOutcome = {
      batchId: req.batchId,
      source: req.source,
      replayed: false,
      watermark: row.watermark,
      watermarkAfter: state.watermark,
      ...capRejected(req.counts),
    };
    const report: ProgressReport = progressOf(outcome, {
      commitSeq: seq,
      committedAt: now,
      durationMs: now - req.startedAt,
      numRowsTotal: totals.rows,
      numRowsUpdated: req.touched.reduce((a, t) => a + t.inserted, 0),
      numRowsRemoved: req.touched.reduce((a, t) => a + t.removed, 0),
      stateBytes: totals.bytes,
    });
    records.push({ source: req.source, batchId: req.batchId, identity: row.body_hash, objects: objectsOf(req, i), outcome, report });
    done.push({ ...outcome, rejected: rejectedTotal(outcome), durationMs: now - req.startedAt });
    return outcome;
  });
  const times = freshReqs.flatMap((r) => (r.maxEventTime === null ? [] : [r.maxEventTime]));
  return {
    outcomes,
    watermark: state.watermark,
    sources: state.sources,
    fresh: records.length > 0,
    firstSeq: input.lastSeq + 1,
    records,
    maxEventTime: times.length > 0 ? Math.max(...times) : null,
    partitions: [...latest.values()],
    observations,
    counters: done.length > 0 ? metricDeltas(done) : [],
    done,
  };
}

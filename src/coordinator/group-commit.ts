import { pokeDestinations } from "../delivery/poke";
import type { Env } from "../env";
import type { CommitRequest } from "../microbatch/commit-request";
import type { BegunMember, GroupResult } from "../microbatch/run-group";
import type { LaneKeys } from "../output/sink";
import type { LiveFigures } from "../stream/advisor/live";
import type { BatchOutcome } from "../stream/batch-outcome";
import { isSharded } from "../stream/shards";
import type { SourceProgress } from "../stream/watermark";
import { planCommit, type MemberRow } from "./commit-plan";
import { recordedOutcome } from "./ledger";
import type { BatchRow } from "./ledger-records";
import type { Meta } from "./meta";
import { begunGroup, stateJson } from "./state";
import type { CoordinatorStores } from "./stores";

/** A request queued for the next micro-batch. */
export type Submission = Pick<BegunMember, "source" | "batchId" | "rows"> & {
  identity: string;
  /** its ledger row as admission read it (null: a first attempt); the lease keeps it so until the group begins */
  row?: BatchRow | null;
};

/** A member as its micro-batch begins: what it is judged by, and the config version that names its config. */
export type Begun = BegunMember & { identity: string; configVersion: number };

/** The micro-batch a commit fixed and began (its begin rides in the commit's record). */
export interface NextGroup {
  items: Submission[];
  id: string;
  members: Begun[];
}

/** What a commit leaves: each member's outcome, the next micro-batch begun, and the watermark and sources after it. */
export interface CommittedGroup {
  outcomes: BatchOutcome[];
  next: NextGroup | null;
  watermark: number;
  sources: Record<string, SourceProgress>;
}

/**
 * Commits a micro-batch in one storage transaction, as planned by planCommit
 * (./commit-plan.ts): each member's record and batch id, and one state record
 * (watermark, sources, figures, counters, and the begin of the micro-batch
 * that runs next, fixed by `beginNext`) in the outbox row or the state row.
 * A member committed already returns its recorded outcome. A failure half way
 * leaves nothing behind. Then the commit is logged and the stream's
 * destinations are poked.
 */
export function commitGroup(
  s: CoordinatorStores,
  object: { ctx: DurableObjectState; env: Env },
  reqs: CommitRequest[],
  begun: { id: string; members: readonly { watermark: number; identity: string }[]; firstSeq: number },
  outbox: GroupResult["outbox"],
  beginNext: (meta: Meta, watermark: number, now: number) => NextGroup | null,
): CommittedGroup {
  const meta = s.meta();
  if (!meta) throw new Error("stream was deleted while the batch ran");
  const { plan, next } = s.transaction(() => {
    const now = Date.now();
    // A micro-batch's members hold their leases since they began: none can have committed meanwhile.
    const rows: MemberRow[] = begun.members.map((b) => ({ body_hash: b.identity, watermark: b.watermark, seq: null, report: null }));
    const lastSeq = s.ledger.lastSeq();
    // The group's lanes name its members by the numbers they were to take: a commit that came first makes them wrong; the group runs again.
    if (begun.firstSeq !== lastSeq + 1) throw new Error(`commit ${lastSeq} came before this group's: its members would not commit from ${begun.firstSeq}`);
    const plan = planCommit<LaneKeys, CommitRequest>({
      config: meta.config,
      now,
      state: { watermark: meta.watermark, sources: s.sourceProgress() },
      lastSeq,
      reqs,
      rows,
      figures: s.partitions.figures(),
      recorded: recordedOutcome,
      outbox: outbox ? { entry: meta.outboxFloor + lastSeq + 1, ranges: outbox.ranges } : null,
      sharded: isSharded(meta.config),
    });
    if (!plan.fresh) return { plan, next: null };
    const changed = new Map<string, LiveFigures>();
    for (const o of plan.observations) s.figures.observe(changed, o.req, o.maxBefore);
    s.partitions.record(plan.partitions);
    s.counters.add(plan.counters);
    plan.records.forEach((r, i) => s.laneRefs.record(plan.firstSeq + i, r.objects));
    const group = s.ledger.commit(begun.id, plan.firstSeq, now, plan.maxEventTime, plan.records, outbox ? "outbox" : "groups");
    // The next micro-batch begins now, judged by the watermark this commit leaves: its begin rides in this record.
    const next = beginNext(meta, plan.watermark, now);
    const record = s.book.next({ watermark: plan.watermark, sources: plan.sources, begun: next ? begunGroup(next.id, next.members, now) : null });
    // A small micro-batch's lanes join the outbox here, in the commit itself, with the record.
    if (outbox)
      s.book.written((s.outbox.append(meta.outboxFloor + plan.firstSeq, outbox.lanes, reqs, now, { v: record.v, s: stateJson(record) }, group!), record));
    else s.book.save(record);
    return { plan, next };
  });
  const { done, watermark, sources } = plan;
  if (done.length > 0) s.observer.commit(meta.name, done, meta.watermark, watermark);
  // Not forgetCaches(): a commit writes no meta row, and the ledger's figures are known (three statements fewer per micro-batch).
  if (plan.fresh) s.ledger.committed(plan.firstSeq + plan.records.length - 1);
  if (done.length > 0) pokeDestinations(object.ctx, object.env, meta.name, () => s.ledger.lastSeq(), meta.shard); // delivery (src/delivery), not awaited
  return { outcomes: plan.outcomes, next, watermark, sources };
}

import { coordinatorStub, partitionStub, type Env } from "../env";
import { inheritedKeys } from "../rescale/read-through";
import { StaleMap } from "../rescale/stale-map";
import { armFault, batchFaultKey, faultsEnabled, heldRun, isInjectedFault, runFaultKey, takeFault } from "../instrument/faults";
import { batchTimer } from "../instrument/opcount";
import { ItemFailed, MicroBatcher } from "../microbatch/batcher";
import type { CommitRequest } from "../microbatch/commit-request";
import { runGroup, type BegunMember, type GroupResult } from "../microbatch/run-group";
import type { BatchOutcome } from "../stream/batch-outcome";
import { batchKey } from "../stream/batch-key";
import { hasIdleTimeout } from "../stream/watermark";
import { recordColumns, columnsKnownBefore } from "../table/known-columns";
import { commitGroup, type Begun, type CommittedGroup, type NextGroup, type Submission } from "./group-commit";
import { recordedOutcome, sameBody } from "./ledger";
import type { BatchRow } from "./ledger-records";
import type { Meta } from "./meta";
import {
  WAIT_FOR_INFLIGHT_MS,
  type BatchAnswer,
  type FailedRun,
  type IngestAuth,
  type IngestRequest,
  type IngestResult,
  type MapVersion,
  type NotKnown,
  type WrongShard,
} from "./protocol";
import { ownership } from "../stream/shard-change";
import { intakeShardsOf, isSharded } from "../stream/shards";
import { begunGroup } from "./state";
import type { CoordinatorStores } from "./stores";
import type { Upkeep } from "./upkeep";
import type { ClockLink } from "./clock-link";
import { recalled } from "./other-shards";

/** How long a begun batch holds its id against a concurrent request with the same id. */
export const LEASE_MS = 30_000;
/** A micro-batch takes at most this many rows (more than any one request may have), */
export const MICRO_BATCH_MAX_ROWS = 100_000;
/** and at most this many requests: its commit record holds each one's record (its report ≤ RECORD_INLINE_MAX_BYTES, ./ledger.ts; ≤ ~1 KB in all) in one row, which SQLite caps at 2 MB. */
export const MICRO_BATCH_MAX_MEMBERS = 1_000;
/**
 * How many macrotasks the micro-batcher waits at most (it stops after three
 * in a row that brought no request) before a micro-batch that follows one of
 * several requests begins, and before a micro-batch of one that queued behind
 * another commits, which fixes the next (src/microbatch/batcher.ts). A few ms
 * per micro-batch under load buys larger micro-batches (fewer partition calls
 * and commits); sequential requests, and a request after a pause, never wait.
 * The measurements are in docs/reference/benchmark.md.
 */
const COALESCE_TURNS = 8;

/** How many times a micro-batch takes a newer partition map and runs again (a map replaced while it ran). */
const STALE_MAP_RETRIES = 3;

/** A batch id the caller may run: its first attempt, or a retry of one that failed before its commit. */
type Runnable = { kind: "new"; source: string } | { kind: "resumed"; source: string; row: BatchRow };
const runnable = (a: { kind: string }): a is Runnable => a.kind === "new" || a.kind === "resumed";

/**
 * Batches in: each request is refused, answered from the ledger (a replay),
 * or queued into the next micro-batch, which begins its members, runs the
 * group (partitions, R2) and commits them together (./group-commit.ts).
 */
export class Intake {
  /** In memory on purpose: a restarted coordinator means the holders crashed, so their leases end. */
  private leases = new Map<string, number>();
  /** batch ids (`{source}\n{batchId}`) queued or running in a micro-batch here: settles when it does */
  private inflight = new Map<string, Promise<void>>();
  /** the next micro-batch, begun by the commit before it (its record carried the begin) */
  private preBegun: NextGroup | null = null;
  /** the bench's micro-batch timer (src/instrument/batch-timing.ts; null: the counters are off) */
  private timer = batchTimer();
  private batcher = new MicroBatcher<Submission, BatchOutcome>((items) => this.runMicroBatch(items), {
    maxWeight: MICRO_BATCH_MAX_ROWS,
    weigh: (s) => s.rows.length,
    maxItems: MICRO_BATCH_MAX_MEMBERS,
    coalesce: { wait: () => new Promise((resolve) => setTimeout(resolve, 0)), turns: COALESCE_TURNS, quiet: 3 },
  });

  constructor(
    private readonly s: CoordinatorStores,
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly upkeep: Upkeep,
    private readonly clock: ClockLink,
    /** a micro-batch met a fenced partition: the map `to` (or a later one) is to be taken before it runs again (Rescaling.refresh) */
    private readonly staleMap: (to: MapVersion) => Promise<void>,
  ) {}

  /** Work between two micro-batches (a rescale's switch): after the one running, before the next. */
  between<T>(fn: () => Promise<T>): Promise<T> {
    return this.batcher.exclusive(fn);
  }

  /**
   * Several requests in one call: a Worker coalesces the requests for this
   * stream that it holds at once, and they join the same micro-batch. A
   * micro-batch that fails answers its members `failed` (safe to retry). A
   * `busy` answer means the same batch id is in flight.
   */
  async ingestMany(reqs: IngestRequest[], deadline = Date.now() + WAIT_FOR_INFLIGHT_MS): Promise<(IngestResult | FailedRun | WrongShard)[]> {
    // Only a recall answers `unknown`.
    return (await this.judgeMany(reqs, deadline, false)) as (IngestResult | FailedRun | WrongShard)[];
  }

  /** Another shard asks of a batch id a shard change moved to it: this shard's answer if it knows the id (it runs it if begun here), else `unknown`. */
  async recall(req: IngestRequest, deadline: number): Promise<IngestResult | FailedRun | NotKnown> {
    const [a] = await this.judgeMany([req], deadline, true);
    return a.kind === "moved" ? { kind: "unknown" } : a;
  }

  private async judgeMany(reqs: IngestRequest[], deadline: number, recall: boolean): Promise<(IngestResult | FailedRun | WrongShard | NotKnown)[]> {
    const meta = this.s.meta();
    const now = Date.now();
    const answers: (IngestResult | FailedRun | WrongShard | NotKnown | Promise<IngestResult> | null)[] = [];
    const queued: Submission[] = [];
    // One shard judges a batch id, ever: a sender with a stale count of shards is told to route it again.
    const shards = meta ? intakeShardsOf(meta.config) : 1;
    const owns = reqs.map((req) => (recall || !meta ? { kind: "known-only" as const } : ownership(req.batchId, meta.shard, shards, meta.shardChange, now)));
    // Moved here by shard changes: the shards that had them answer the batches they know (a replay, a 422, in flight), all asked at once before any is admitted
    // here, unless this shard refuses the caller (as they would: the same credentials). No await when none is asked: admitted in the turn the call came.
    const asking = owns.map((own, i) =>
      own.kind === "consult" && meta && this.s.credentials.caller(meta.config, reqs[i].sourceHeader, reqs[i].auth).kind === "ok"
        ? recalled(this.env, meta.name, own.shards, reqs[i], deadline)
        : null,
    );
    const asked = asking.some((a) => a !== null) ? await Promise.all(asking) : asking.map(() => null);
    for (const [i, req] of reqs.entries()) {
      if (!meta) {
        answers.push(req.auth.kind === "admin" ? { kind: "missing" } : { kind: "unauthorized" });
        continue;
      }
      const own = owns[i];
      if (own.kind === "moved") {
        answers.push({ kind: "moved", shards });
        continue;
      }
      const was = asked[i];
      if (was) {
        answers.push(was);
        continue;
      }
      const faultKey = batchFaultKey(meta.name, req.batchId);
      const fault = takeFault(faultKey); // tests only (src/instrument/faults.ts)
      const a = this.admitBatch(meta, req.sourceHeader, req.batchId, { hash: req.identity, bytes: req.bytes, rows: req.rows.length }, req.auth, now);
      if (own.kind === "known-only" && a.kind === "new") {
        const change = `the stream's shards are changing (${meta.shardChange?.from} → ${meta.shardChange?.to}): retry; if this lasts, send the PATCH again`;
        answers.push(recall ? { kind: "unknown" } : { kind: "failed", retryAfterMs: 1_000, message: change });
        continue;
      }
      const running = a.kind === "busy" && a.source !== undefined ? this.inflight.get(batchKey(a.source, req.batchId)) : undefined;
      if (running && now < deadline) {
        // The same batch id is running here: wait for it (not the producer polling with the whole body), then answer as a retry would be.
        answers.push(this.afterInflight(req, running, deadline, recall));
        continue;
      }
      if (!runnable(a)) {
        if (a.kind === "busy") armFault(faultKey, fault); // the caller polls again, with its crash point
        answers.push(a);
        continue;
      }
      // The lease also keeps a second copy of this batch id in the same call out.
      this.leases.set(batchKey(a.source, req.batchId), now + LEASE_MS);
      armFault(runFaultKey(meta.name, a.source, req.batchId), fault);
      answers.push(null);
      queued.push({ source: a.source, batchId: req.batchId, identity: req.identity, rows: req.rows, row: a.kind === "resumed" ? a.row : null });
    }
    this.timer?.submitted(queued);
    const outcomes = this.batcher.submitAll(queued);
    queued.forEach((s, i) => {
      const key = batchKey(s.source, s.batchId);
      // A failed run lets go of its id here, before anyone waiting on it looks again.
      const settled = outcomes[i].then(
        () => undefined,
        () => void this.leases.delete(key),
      );
      this.inflight.set(key, settled);
      void settled.then(() => {
        if (this.inflight.get(key) === settled) this.inflight.delete(key);
      });
    });
    let next = 0;
    return Promise.all(
      answers.map(async (a) => {
        if (a !== null) return a;
        const s = queued[next];
        const outcome = outcomes[next++];
        try {
          return { kind: "done" as const, outcome: await outcome };
        } catch (e) {
          // Let the producer's retry start at once; everything is safe to re-run.
          this.leases.delete(batchKey(s.source, s.batchId));
          return { kind: "failed" as const, message: e instanceof Error ? e.message : String(e) };
        }
      }),
    );
  }

  /** The stream was deleted: nothing it held in flight is let in again. */
  forget(): void {
    this.preBegun = null;
    this.leases.clear();
  }

  /** A request for a batch id that is running: once that run settles (or the deadline passes), admitted again. */
  private async afterInflight(req: IngestRequest, running: Promise<void>, deadline: number, recall: boolean): Promise<IngestResult> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([running, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    // Asked again as it was asked (a recall: the batch may have moved to another shard since, and this one still answers it).
    const [r] = await this.judgeMany([req], Date.now() < deadline ? deadline : 0, recall);
    if (r.kind === "failed" || r.kind === "moved" || r.kind === "unknown")
      throw new Error(r.kind === "failed" ? r.message : "the batch moved to another shard");
    return r;
  }

  /**
   * Runs one micro-batch: begin every member, run the group (partitions, R2),
   * commit them together. Its begin is recorded where it costs no row of its
   * own when it can: in the commit record of the micro-batch before it
   * (preBegun), else in the state row. A micro-batch that fails here leaves
   * its begin in the ledger's begin records, for its members' retries.
   */
  private async runMicroBatch(items: Submission[]): Promise<(BatchOutcome | ItemFailed)[]> {
    const meta = this.s.meta();
    if (!meta) throw new Error("stream was deleted while the batch ran");
    const now = Date.now();
    const timed = this.timer?.run(items, now);
    const pre = this.preBegun && sameItems(this.preBegun.items, items) ? this.preBegun : null;
    this.preBegun = null;
    // A first attempt is judged by the watermark in force now; a retry keeps its own.
    const group = pre?.id ?? `g-${crypto.randomUUID()}`;
    const members = pre?.members ?? this.withTableColumns(items.map((it) => this.beginMember(meta, it, now)));
    if (!pre) this.s.book.write({ begun: begunGroup(group, members, now) });
    const held = faultsEnabled() ? heldRun(items.map((it) => batchFaultKey(meta.name, it.batchId))) : null; // tests only: a run held in flight
    if (held) await held;
    // Runs go one at a time: the members will commit as firstSeq, firstSeq + 1, … (their lanes name kept copies among them by these; the commit checks it).
    const firstSeq = this.s.ledger.lastSeq() + 1;
    try {
      const { commits, outbox, columns, failed } = await this.runRouted(group, members, firstSeq, meta.watermark);
      timed?.applied();
      // A member that failed alone (its planning threw) is answered so; the others commit without it.
      const failedAlone = (i: number) => new ItemFailed(failed.get(i));
      if (commits.length === 0) return items.map((_, i) => failedAlone(i));
      await this.batcher.gatherNext(); // a micro-batch of one: the next one, which its commit fixes, may grow meanwhile
      await this.clock.beforeCommit(meta, commits); // several shards: a source's first commit here is the clock's to know first
      if (this.s.meta()?.epoch !== meta.epoch) throw new Error("stream was deleted while the batch ran");
      const committed = failed.size === 0 ? members : members.filter((_, i) => !failed.has(i));
      const begun = { id: group, members: committed, firstSeq };
      const done = commitGroup(this.s, { ctx: this.ctx, env: this.env }, commits, begun, outbox, (m, watermark, at) => this.beginNext(m, watermark, at));
      this.preBegun = done.next;
      await this.afterCommit(meta, commits, group, outbox !== null, done);
      const outcomes = done.outcomes;
      if (this.s.meta()) recordColumns(this.s.sql, columns, Date.now());
      timed?.committed();
      if (failed.size === 0) return outcomes;
      let n = 0;
      return items.map((_, i) => (failed.has(i) ? failedAlone(i) : outcomes[n++]));
    } catch (e) {
      this.timer?.failed();
      // Logged once per micro-batch (its requests are answered "failed": a 500, a queue retry, a transient file error).
      if (!isInjectedFault(e)) console.error(`stream ${meta.name}: a micro-batch of ${items.length} failed`, e);
      // The retries resume from the ledger's begin record (the state record's begin is overwritten by the next micro-batch's).
      if (this.s.meta()?.epoch === meta.epoch) this.s.ledger.begin(group, members, now);
      throw e;
    }
  }

  /**
   * The group run by the partition map in force. A partition fenced by a
   * rescale (several shards: another shard's switch) says which map replaced
   * it: that map is taken and the group runs again on it, its members
   * resumed, so that what old partitions decided (handed to their
   * successors) stands. At most a few times: a map replaced again meanwhile.
   */
  private async runRouted(group: string, members: BegunMember[], firstSeq: number, watermark: number): Promise<GroupResult> {
    for (let attempt = 0; ; attempt++) {
      const meta = this.s.meta();
      if (!meta) throw new Error("stream was deleted while the batch ran");
      const sharded = isSharded(meta.config);
      try {
        return await runGroup(
          {
            group,
            stream: meta.name,
            epoch: meta.epoch,
            watermark,
            bucket: this.env.SINK,
            applyGroup: async (p, r) => {
              const answer = await partitionStub(this.env, meta.name, p, meta.mapVersion).applyGroup(sharded ? { ...r, gather: true } : r);
              if (answer.fenced) throw new StaleMap(answer.fenced);
              return answer;
            },
            partitions: meta.config.partitions,
            ...(meta.rescale
              ? {
                  inherited: (_p, entries) =>
                    inheritedKeys(meta.rescale!, (q) => partitionStub(this.env, meta.name, q, meta.rescale!.from.version), meta.epoch, entries),
                }
              : {}),
            takeForget: (p) => this.s.partitions.takeForget(p),
            committedSeq: (source, batchId) => this.s.committedSeq(source, batchId),
            firstSeq,
          },
          members,
        );
      } catch (e) {
        if (!(e instanceof StaleMap) || attempt >= STALE_MAP_RETRIES) throw e;
        await this.staleMap(e.to);
        members = members.map((m) => ({ ...m, resumed: true }));
      }
    }
  }

  /** After a commit: leases end, partitions may drop the group's decisions, and the alarm's jobs are due. */
  private async afterCommit(meta: Meta, commits: readonly CommitRequest[], group: string, viaOutbox: boolean, done: CommittedGroup): Promise<void> {
    const { alarms, outbox } = this.s;
    // The decisions in the partitions are no longer needed: a retry is answered here. A micro-batch's are one entry per partition.
    const forget = new Set<number>();
    for (const r of commits) {
      this.leases.delete(batchKey(r.source, r.batchId));
      for (const t of r.touched) forget.add(t.p);
    }
    for (const p of forget) this.s.partitions.forgetLater(p, group);
    this.clock.afterCommit(meta);
    await this.upkeep.evictionIfDue(meta.config, meta.watermark, done.watermark);
    if (viaOutbox) await alarms.flush(outbox.pending());
    // Published soon: objects written now (the outbox's are published after their flush), and the table.
    if (!viaOutbox || meta.config.table) await alarms.publish();
    if (hasIdleTimeout(meta.config)) await alarms.idle(meta.config, done.sources);
  }

  /**
   * Who may run this batch id, and how: refused, answered from the ledger, or
   * to run (new, or resumed after a failed attempt). Writes nothing.
   */
  private admitBatch(
    meta: Meta,
    sourceHeader: string | null,
    batchId: string,
    body: { hash: string; bytes: number; rows: number },
    auth: IngestAuth,
    now: number,
  ): BatchAnswer | Runnable {
    const caller = this.s.credentials.caller(meta.config, sourceHeader, auth);
    if (caller.kind !== "ok") return caller;
    const source = caller.source;
    const row = this.s.ledger.row(source, batchId);
    if (row?.seq != null) {
      return sameBody(row.body_hash, body.hash) ? { kind: "replay", source, outcome: recordedOutcome(row, source, batchId) } : { kind: "conflict" };
    }
    if (row && !sameBody(row.body_hash, body.hash)) return { kind: "conflict" };
    const until = this.leases.get(batchKey(source, batchId));
    if (until !== undefined && until > now) return { kind: "busy", retryAfterMs: until - now, source };
    if (row) return { kind: "resumed", source, row };
    // Limits bind new batches only: a batch begun under higher limits still completes.
    const { maxBodyBytes, maxRows } = meta.config.limits;
    if (body.bytes > maxBodyBytes) return { kind: "too-large", detail: `the body is ${body.bytes} bytes; this stream accepts at most ${maxBodyBytes}` };
    if (body.rows > maxRows) return { kind: "too-large", detail: `the batch has ${body.rows} rows; this stream accepts at most ${maxRows}` };
    return { kind: "new", source };
  }

  /**
   * A batch's first attempt (judged by the watermark, time and config in force
   * now), or its retry with those of its first attempt read back, so that it is
   * planned and judged exactly as before. The caller records the begin.
   */
  private beginMember(meta: Meta, s: Submission, now: number, watermark = meta.watermark): Begun {
    const row = s.row !== undefined ? s.row : this.s.ledger.row(s.source, s.batchId);
    if (row && row.seq === null) {
      const config = row.config_version === meta.configVersion ? meta.config : this.s.metaStore.configAt(row.config_version);
      return { ...s, watermark: row.watermark, begunAt: row.begun_at, config, configVersion: row.config_version, resumed: true };
    }
    return { ...s, watermark, begunAt: now, config: meta.config, configVersion: meta.configVersion, resumed: false };
  }

  /**
   * Inside a micro-batch's commit: fixes the next micro-batch (whatever has
   * queued meanwhile) and begins its members. Not for a stream with a table:
   * its members are judged by the columns known before they began, which
   * this commit's may add to.
   */
  private beginNext(meta: Meta, watermark: number, now: number): NextGroup | null {
    if (meta.config.table) return null;
    const items = this.batcher.takeNext();
    if (items.length === 0) return null;
    return { items, id: `g-${crypto.randomUUID()}`, members: items.map((it) => this.beginMember(meta, it, now, watermark)) };
  }

  /** A stream with a table: each member is to be judged by the columns known before it began (src/table/known-columns.ts). */
  private withTableColumns<M extends BegunMember>(members: M[]): M[] {
    const known = new Map<number, string[]>(); // first attempts share their begin time: one read for them all
    const before = (at: number) => known.get(at) ?? known.set(at, columnsKnownBefore(this.s.sql, at)).get(at)!;
    return members.map((m) => (m.config.table ? { ...m, tableColumns: before(m.begunAt) } : m));
  }
}

/** Whether the batcher runs the micro-batch a commit began (takeNext's items, in order). */
const sameItems = (a: readonly Submission[], b: readonly Submission[]) => a.length === b.length && a.every((x, i) => x === b[i]);

import { boundFieldChanges, idempotencyWindowOf, webhookBodyLimit, type StreamConfig } from "../stream/config";
import { own } from "../lib/own";
import { batchKey } from "../stream/batch-key";
import type { BatchOutcome, ProgressReport } from "../stream/report";
import { globalWatermark, hasIdleTimeout, isIdle, sourceWatermark, type SourceProgress } from "../stream/watermark";
import { streamMetricsOf, webhookFigures, type StreamMetrics } from "../stream/metrics";
import { CommitObserver } from "../instrument/observe";
import { batchTimer } from "../instrument/opcount";
import { destinationIndex, partitionStub, registryStub, type Env } from "../env";
import { deleteStreamObjects, type Lane, type LaneKeys } from "../output/sink";
import { Outbox } from "../output/outbox";
import { pokeDestinations } from "../delivery/poke";
import { PublishGuard, publishManifest, publishTable, tablePublishingOf, type PublishContext, type TablePublishing } from "../output/publisher";
import { columnsKnownBefore, recordColumns } from "../table/known-columns";
import { isSameEventLane, LaneRefs } from "./lane-refs";
import type { StoredCredential } from "../credentials/credential";
import { SqliteObject } from "../storage/sqlite-object";
import { COORDINATOR_MIGRATIONS } from "./migrations";
import { batchFaultKey, faultsEnabled, heldRun, isInjectedFault, takeFault } from "../instrument/faults";
import { ItemFailed, MicroBatcher } from "../microbatch/batcher";
import { isWebhookCounter } from "../webhooks/tally";
import { horizonReason, RETRY_HORIZON_MS } from "../webhooks/retry-horizon";
import { runGroup, type BegunMember, type GroupResult } from "../microbatch/run-group";
import { CredentialStore } from "./credentials";
import { BatchLedger, recordedOutcome, sameBody, type BatchRow } from "./ledger";
import { PRUNE_STEP_GROUPS, pruneStep, type Bookkeeping } from "./window";
import { MetricCounters } from "./counters";
import { LEDGER_RETENTION_MS } from "../partition/protocol";
import { AdviceFigures } from "./advice";
import { PartitionBook } from "./partitions";
import { liveAdvice, type DelayFloor, type LiveAdvice, type LiveFigures } from "../stream/advisor/live";
import { StateBook, stateJson, type BegunGroup } from "./state";
import { MetaStore, type Meta } from "./meta";
import { Alarms } from "./alarms";
import { planCommit, type MemberRow } from "./commit-plan";
import type { CommitRequest } from "../microbatch/commit-request";
import {
  WAIT_FOR_INFLIGHT_MS,
  type Admission,
  type BatchAnswer,
  type CallerClaim,
  type CoordinatorRpc,
  type ConfigureResult,
  type IngestAuth,
  type IngestRequest,
  type IngestResult,
  type StreamDescription,
} from "./protocol";

export { COORDINATOR_MIGRATIONS };

/** How long a begun batch holds its id against a concurrent request with the same id. */
export const LEASE_MS = 30_000;
export { EVICTION_DELAY_MS, PUBLISH_AFTER_MS, PRUNE_MIN_INTERVAL_MS } from "./alarms";
/** A micro-batch takes at most this many rows (more than any one request may have), */
export const MICRO_BATCH_MAX_ROWS = 100_000;
/** and at most this many requests: its commit record holds each one's record (its report ≤ RECORD_INLINE_MAX_BYTES, src/coordinator/ledger.ts; ≤ ~1 KB in all) in one row, which SQLite caps at 2 MB. */
export const MICRO_BATCH_MAX_MEMBERS = 1_000;

/**
 * How many macrotasks the micro-batcher waits at most (it stops after three
 * in a row that brought no request) before a micro-batch that follows one of
 * several requests begins, and before a micro-batch of one that queued
 * behind another commits, which fixes the next (src/microbatch/batcher.ts).
 * Measured with `npm run bench` (BENCH_BASELINE, side by side): 16
 * concurrent webhooks went from ~3 requests per micro-batch to ~6 (rows
 * written per event 3.3 → ~3.0: fewer partition calls and commits; fewer
 * log lines), 4 clients with 500-event batches from one request per
 * micro-batch to ~2.5; +7–25% events/s across runs, p50 and p99 no higher
 * (the queues are shorter). The price is a few ms per micro-batch under
 * load; sequential requests, and a request after a pause, never wait.
 */
const COALESCE_TURNS = 8;

/** A batch id the caller may run: its first attempt, or a retry of one that failed before its commit. */
type Runnable = { kind: "new"; source: string } | { kind: "resumed"; source: string; row: BatchRow };
const runnable = (a: { kind: string }): a is Runnable => a.kind === "new" || a.kind === "resumed";

/** A request queued for the next micro-batch. */
type Submission = Pick<BegunMember, "source" | "batchId" | "rows" | "fault"> & {
  identity: string;
  /** its ledger row as admission read it (null: a first attempt); the lease keeps it so until the group begins */
  row?: BatchRow | null;
};

/** A member as its micro-batch begins: what it is judged by, and the config version that names its config. */
type Begun = BegunMember & { identity: string; configVersion: number };

/**
 * One per stream: config, per-source progress, the global watermark, the batch
 * ledger (begun/committed with outcomes, which doubles as the progress log and
 * the output index) and the eviction fan-out to partitions. The ledger, the
 * credentials, the advisor's live figures and the partition figures each have
 * a room of their own in src/coordinator/; this class admits, batches, commits
 * and calls the partitions over them.
 */
export class Coordinator extends SqliteObject<Env> implements CoordinatorRpc {
  /** In memory on purpose: a restarted coordinator means the holders crashed, so their leases end. */
  private leases = new Map<string, number>();
  /** batch ids (`{source}\n{batchId}`) queued or running in a micro-batch here: settles when it does */
  private inflight = new Map<string, Promise<void>>();
  private outbox: Outbox;
  /** the batch ledger (src/coordinator/ledger.ts) */
  private ledger: BatchLedger;
  /** the stream's credentials (src/coordinator/credentials.ts) */
  private keys: CredentialStore;
  /** the delay advisor's live figures (src/coordinator/advice.ts) */
  private figures: AdviceFigures;
  /** the partitions' last figures and forget-lists (src/coordinator/partitions.ts) */
  private partitions: PartitionBook;
  /** the commit index of the conflicts and duplicates lanes (src/coordinator/lane-refs.ts) */
  private laneRefs: LaneRefs;
  /** the counters of /metrics (src/coordinator/counters.ts) */
  private counters: MetricCounters;
  /** the meta row, config versions and publication progress (src/coordinator/meta.ts) */
  private metaStore: MetaStore;
  /** the state record and the figures it carries (src/coordinator/state.ts) */
  private book: StateBook;
  /** the next micro-batch, begun by the commit before it (its record carried the begin) */
  private preBegun: { items: Submission[]; id: string; members: Begun[] } | null = null;
  /** the one alarm and its jobs (src/coordinator/alarms.ts) */
  private alarms: Alarms;
  /** the commit log line and data point (src/instrument/observe.ts) */
  private observer: CommitObserver;
  /** the bench's micro-batch timer (src/instrument/batch-timing.ts; null: the counters are off) */
  private timer = batchTimer();
  /** no prune step can forget anything before this (the oldest group's window ends then; 0: unknown); a config change resets it */
  private pruneNotBefore = 0;
  private batcher = new MicroBatcher<Submission, BatchOutcome>((items) => this.runMicroBatch(items), {
    maxWeight: MICRO_BATCH_MAX_ROWS,
    weigh: (s) => s.rows.length,
    maxItems: MICRO_BATCH_MAX_MEMBERS,
    coalesce: { wait: () => new Promise((resolve) => setTimeout(resolve, 0)), turns: COALESCE_TURNS, quiet: 3 },
  });
  constructor(ctx: DurableObjectState, env: Env) {
    // Whether this stream exists is whether its tables do (`exists`): the schema is created
    // only when an admin creates the stream, so requests naming streams that do not exist
    // (with made-up credentials, say) leave no storage behind.
    super(ctx, env, { migrations: COORDINATOR_MIGRATIONS, countAs: "Coordinator", countCalls: true, createdWith: "meta" });
    this.outbox = new Outbox(this.sql);
    this.ledger = new BatchLedger(this.sql, this.outbox);
    this.keys = new CredentialStore(this.sql);
    this.book = new StateBook(
      this.sql,
      () => this.outbox.records(),
      (b) => this.adopt(b),
    );
    this.figures = this.book.figures;
    this.partitions = this.book.partitions;
    this.laneRefs = new LaneRefs(this.sql, this.outbox);
    this.counters = this.book.counters;
    this.metaStore = new MetaStore(this.sql);
    this.alarms = new Alarms(ctx.storage);
    this.observer = new CommitObserver(env);
  }

  async configure(name: string, config: StreamConfig): Promise<ConfigureResult> {
    const meta = this.meta();
    if (!meta) {
      // The Registry counts creations of a name across deletes: a re-created stream's webhook-ids differ from the last one's.
      const incarnation = await registryStub(this.env).claimIncarnation(name);
      if (this.meta()) return this.configure(name, config); // created while we asked: this PUT updates it (the number is left unused)
      this.migrate();
      this.exists = true;
      this.metaStore.create(name, config, Date.now(), incarnation);
      this.forgetCaches();
      return { status: "created", config };
    }
    const changed = boundFieldChanges(meta.config, config);
    if (changed.length > 0) return { status: "conflict", changed, config: meta.config };
    if (JSON.stringify(meta.config) === JSON.stringify(config)) return { status: "unchanged", config };
    // A new delay or new declared sources can move the watermark (never back).
    const watermark = globalWatermark(config, this.sourceProgress(), meta.watermark, Date.now());
    this.metaStore.update(config, meta.configVersion + 1, watermark);
    this.forgetCaches();
    await this.evictionIfDue(config, meta.watermark, watermark);
    return { status: "updated", config };
  }

  async describe(): Promise<StreamDescription | null> {
    const meta = this.meta();
    if (!meta) return null;
    const progress = this.sourceProgress();
    const names = new Set([...Object.keys(meta.config.sources), ...Object.keys(progress)]);
    const sources: StreamDescription["sources"] = {};
    for (const s of [...names].sort()) {
      sources[s] = {
        maxEventTime: own(progress, s)?.maxEventTime ?? null,
        watermark: sourceWatermark(meta.config, s, own(progress, s)),
        lastBatchAt: own(progress, s)?.lastBatchAt ?? null,
        declared: Object.hasOwn(meta.config.sources, s),
        idle: isIdle(meta.config, s, own(progress, s), Date.now()),
      };
    }
    const stats = await Promise.all(Array.from({ length: meta.config.partitions }, (_, p) => partitionStub(this.env, meta.name, p).describe(meta.epoch)));
    // Commit numbers run 1, 2, 3… with no gaps: the last one is the count, without a scan of the ledger.
    const committed = this.ledger.lastSeq();
    const webhooks = webhookFigures(this.counters.all());
    return {
      config: meta.config,
      epoch: meta.epoch,
      createdAt: meta.createdAt,
      watermark: meta.watermark,
      sources,
      state: { rows: stats.reduce((a, s) => a + s.rows, 0), bytes: stats.reduce((a, s) => a + s.bytes, 0), ...unkeyedHash(stats) },
      batches: { committed },
      bookkeeping: this.bookkeeping(meta),
      ...(webhooks.length > 0 ? { webhooks: Object.fromEntries(webhooks.map(({ source, ...w }) => [source, w])) } : {}),
    };
  }

  /** The Coordinator's own storage and the batch ids it remembers (GET /v1/streams/{stream}, /metrics). */
  private bookkeeping(meta: Meta): Bookkeeping {
    return { bytes: this.ctx.storage.sql.databaseSize, batchesRemembered: this.ledger.remembered(), idempotencyWindow: idempotencyWindowOf(meta.config) };
  }

  /**
   * Before a body is read: is this caller allowed in, as which source, and what
   * may it send? Cheap (one indexed lookup) and writes nothing, so a wrong
   * credential costs no more than this. ingest checks again: it is the authority.
   */
  admit(sourceHeader: string | null, claim: CallerClaim): Admission {
    const meta = this.meta();
    if (!meta) return claim.kind === "admin" ? { kind: "missing" } : { kind: "unauthorized" };
    const caller = this.keys.caller(meta.config, sourceHeader, claim);
    if (caller.kind !== "ok") return caller;
    return {
      kind: "admitted",
      source: caller.source,
      limits: meta.config.limits,
      signers: caller.signers,
      webhookBytes: webhookBodyLimit(meta.config, caller.source),
    };
  }

  /**
   * A Worker's counts of this source's webhook replays and refused signatures
   * (src/webhooks/tally.ts), at most one call per source every few seconds per
   * isolate: added to the /metrics counters and written with the state record.
   * A stream that does not exist, or a source with no provider credential,
   * counts nothing (anyone can name them).
   */
  noteWebhooks(source: string, deltas: [string, number][]): void {
    const meta = this.meta();
    if (!meta || this.keys.caller(meta.config, source, { kind: "provider" }).kind === "unauthorized") return;
    const counted = deltas
      .filter(([name, n]) => isWebhookCounter(name) && Number.isSafeInteger(n) && n > 0)
      .map(([name, n]): [string, string, number] => [name, source, n]);
    if (counted.length === 0) return;
    this.counters.add(counted);
    this.book.write();
  }

  /** Whether a batch id has begun (or committed): such a batch keeps the limits of its first attempt. */
  knownBatch(source: string, batchId: string): boolean {
    if (!this.exists) return false;
    return this.ledger.known(source, batchId);
  }

  /**
   * Ingests one batch (POST …/events): refused, answered from the ledger
   * (replay), or queued into the next micro-batch. Requests that arrive while
   * a micro-batch runs are coalesced into the next one; each gets its own
   * outcome. A `busy` answer means the same batch id is in flight. A failed
   * micro-batch is thrown: the Worker calls ingestMany, which answers it as a
   * value (a throwing RPC method is logged as uncaught, per call).
   */
  async ingest(req: IngestRequest): Promise<IngestResult> {
    const [r] = await this.ingestMany([req]);
    if (r.kind === "failed") throw new Error(r.message);
    return r;
  }

  /**
   * Several requests in one call: a Worker coalesces the requests for this
   * stream that it holds at once, and they join the same micro-batch. A
   * micro-batch that fails answers its members `failed` (safe to retry).
   */
  async ingestMany(reqs: IngestRequest[], deadline = Date.now() + WAIT_FOR_INFLIGHT_MS): Promise<(IngestResult | { kind: "failed"; message: string })[]> {
    const meta = this.meta();
    const now = Date.now();
    const answers: (IngestResult | Promise<IngestResult> | null)[] = [];
    const queued: Submission[] = [];
    for (const req of reqs) {
      if (!meta) {
        answers.push(req.auth.kind === "admin" ? { kind: "missing" } : { kind: "unauthorized" });
        continue;
      }
      const fault = takeFault(batchFaultKey(meta.name, req.batchId)); // tests only (src/instrument/faults.ts)
      const a = this.admitBatch(meta, req.sourceHeader, req.batchId, { hash: req.identity, bytes: req.bytes, rows: req.rows.length }, req.auth, now);
      const running = a.kind === "busy" && a.source !== undefined ? this.inflight.get(batchKey(a.source, req.batchId)) : undefined;
      if (running && now < deadline) {
        // The same batch id is running here: wait for it (not the producer polling with the whole body), then answer as a retry would be.
        answers.push(this.afterInflight(req, running, deadline));
        continue;
      }
      if (!runnable(a)) {
        answers.push(a);
        continue;
      }
      // The lease also keeps a second copy of this batch id in the same call out.
      this.leases.set(batchKey(a.source, req.batchId), now + LEASE_MS);
      answers.push(null);
      queued.push({
        source: a.source,
        batchId: req.batchId,
        identity: req.identity,
        rows: req.rows,
        fault,
        row: a.kind === "resumed" ? a.row : null,
      });
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

  /** A request for a batch id that is running: once that run settles (or the deadline passes), admitted again. */
  private async afterInflight(req: IngestRequest, running: Promise<void>, deadline: number): Promise<IngestResult> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([running, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    const [r] = await this.ingestMany([req], Date.now() < deadline ? deadline : 0);
    if (r.kind === "failed") throw new Error(r.message);
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
    const meta = this.meta();
    if (!meta) throw new Error("stream was deleted while the batch ran");
    const now = Date.now();
    const timed = this.timer?.run(items, now);
    const pre = this.preBegun && sameItems(this.preBegun.items, items) ? this.preBegun : null;
    this.preBegun = null;
    // A first attempt is judged by the watermark in force now; a retry keeps its own.
    const group = pre?.id ?? `g-${crypto.randomUUID()}`;
    const members = pre?.members ?? this.withTableColumns(items.map((it) => this.beginMember(meta, it, now)));
    if (!pre) this.book.write({ begun: begunGroup(group, members, now) });
    const held = faultsEnabled() ? heldRun(items.map((it) => batchFaultKey(meta.name, it.batchId))) : null; // tests only: a run held in flight
    if (held) await held;
    // Runs go one at a time: the members will commit as firstSeq, firstSeq + 1, … (their lanes name kept copies among them by these; the commit checks it).
    const firstSeq = this.ledger.lastSeq() + 1;
    try {
      const { commits, outbox, columns, failed } = await runGroup(
        {
          group,
          stream: meta.name,
          epoch: meta.epoch,
          watermark: meta.watermark,
          bucket: this.env.SINK,
          applyGroup: (p, r) => partitionStub(this.env, meta.name, p).applyGroup(r),
          takeForget: (p) => this.partitions.takeForget(p),
          committedSeq: (source, batchId) => this.committedSeq(source, batchId),
          firstSeq,
        },
        members,
      );
      timed?.applied();
      // A member that failed alone (its planning threw) is answered so; the others commit without it.
      const failedAlone = (i: number) => new ItemFailed(failed.get(i));
      if (commits.length === 0) return items.map((_, i) => failedAlone(i));
      await this.batcher.gatherNext(); // a micro-batch of one: the next one, which its commit fixes, may grow meanwhile
      if (this.meta()?.epoch !== meta.epoch) throw new Error("stream was deleted while the batch ran");
      const committed = failed.size === 0 ? members : members.filter((_, i) => !failed.has(i));
      const outcomes = await this.commitGroup(commits, { id: group, members: committed, firstSeq }, outbox);
      if (this.meta()) recordColumns(this.sql, columns, Date.now());
      timed?.committed();
      if (failed.size === 0) return outcomes;
      let next = 0;
      return items.map((_, i) => (failed.has(i) ? failedAlone(i) : outcomes[next++]));
    } catch (e) {
      this.timer?.failed();
      // Logged once per micro-batch (its requests are answered "failed": a 500, a queue retry, a transient file error).
      if (!isInjectedFault(e)) console.error(`stream ${meta.name}: a micro-batch of ${items.length} failed`, e);
      // The retries resume from the ledger's begin record (the state record's begin is overwritten by the next micro-batch's).
      if (this.meta()?.epoch === meta.epoch) this.ledger.begin(group, members, now);
      throw e;
    }
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
    const caller = this.keys.caller(meta.config, sourceHeader, auth);
    if (caller.kind !== "ok") return caller;
    const source = caller.source;
    const row = this.ledger.row(source, batchId);
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
    const row = s.row !== undefined ? s.row : this.ledger.row(s.source, s.batchId);
    if (row && row.seq === null) {
      const config = row.config_version === meta.configVersion ? meta.config : this.metaStore.configAt(row.config_version);
      return { ...s, watermark: row.watermark, begunAt: row.begun_at, config, configVersion: row.config_version, resumed: true };
    }
    return { ...s, watermark, begunAt: now, config: meta.config, configVersion: meta.configVersion, resumed: false };
  }

  /** One commit transaction; the figures it changed in memory are read again if it rolls back. */
  private committing<T>(fn: () => T): T {
    try {
      return this.ctx.storage.transactionSync(fn);
    } catch (e) {
      this.book.forget();
      this.ledger.reset(); // its last commit number, begin records and ids, as storage is after the rollback
      this.outbox.forget(); // what is waiting in it, as storage is after the rollback
      throw e;
    }
  }

  /**
   * Commits a micro-batch in one storage transaction, as planned by
   * planCommit (src/coordinator/commit-plan.ts): each member's record and
   * batch id, and one state record (watermark, sources, figures, counters,
   * and the begin of the micro-batch that runs next) in the outbox row or
   * the state row. A member committed already returns its recorded outcome.
   * A failure half way leaves nothing behind.
   */
  private async commitGroup(
    reqs: CommitRequest[],
    begun: { id: string; members: readonly { watermark: number; identity: string }[]; firstSeq: number },
    outbox: GroupResult["outbox"],
  ): Promise<BatchOutcome[]> {
    const meta = this.meta();
    if (!meta) throw new Error("stream was deleted while the batch ran");
    const { plan, next } = this.committing(() => {
      const now = Date.now();
      // A micro-batch's members hold their leases since they began: none can have committed meanwhile.
      const rows: MemberRow[] = begun.members.map((b) => ({ body_hash: b.identity, watermark: b.watermark, seq: null, report: null }));
      const lastSeq = this.ledger.lastSeq();
      // The group's lanes name its members by the numbers they were to take: a commit that came first makes them wrong; the group runs again.
      if (begun.firstSeq !== lastSeq + 1) throw new Error(`commit ${lastSeq} came before this group's: its members would not commit from ${begun.firstSeq}`);
      const plan = planCommit<LaneKeys, CommitRequest>({
        config: meta.config,
        now,
        state: { watermark: meta.watermark, sources: this.sourceProgress() },
        lastSeq,
        reqs,
        rows,
        figures: this.partitions.figures(),
        recorded: recordedOutcome,
        outbox: outbox ? { entry: meta.outboxFloor + lastSeq + 1, ranges: outbox.ranges } : null,
      });
      if (!plan.fresh) return { plan, next: null };
      const changed = new Map<string, LiveFigures>();
      for (const o of plan.observations) this.figures.observe(changed, o.req, o.maxBefore);
      this.partitions.record(plan.partitions);
      this.counters.add(plan.counters);
      plan.records.forEach((r, i) => this.laneRefs.record(plan.firstSeq + i, r.objects));
      const group = this.ledger.commit(begun.id, plan.firstSeq, now, plan.maxEventTime, plan.records, outbox ? "outbox" : "groups");
      // The next micro-batch begins now, judged by the watermark this commit leaves: its begin rides in this record.
      const next = this.beginNext(meta, plan.watermark, now);
      const record = this.book.next({ watermark: plan.watermark, sources: plan.sources, begun: next ? begunGroup(next.id, next.members, now) : null });
      // A small micro-batch's lanes join the outbox here, in the commit itself, with the record.
      if (outbox)
        this.book.written(
          (this.outbox.append(meta.outboxFloor + plan.firstSeq, outbox.lanes, reqs, now, { v: record.v, s: stateJson(record) }, group!), record),
        );
      else this.book.save(record);
      return { plan, next };
    });
    this.preBegun = next;
    const { done, watermark, sources } = plan;
    if (done.length > 0) this.observer.commit(meta.name, done, meta.watermark, watermark);
    // Not forgetCaches(): a commit writes no meta row, and the ledger's figures are known (three statements fewer per micro-batch).
    if (plan.fresh) this.ledger.committed(plan.firstSeq + plan.records.length - 1);
    if (done.length > 0) pokeDestinations(this.ctx, this.env, meta.name, () => this.ledger.lastSeq()); // delivery (src/delivery), not awaited
    // The decisions in the partitions are no longer needed: a retry is answered here. A micro-batch's are one entry per partition.
    const forget = new Set<number>();
    for (const r of reqs) {
      this.leases.delete(batchKey(r.source, r.batchId));
      for (const t of r.touched) forget.add(t.p);
    }
    for (const p of forget) this.partitions.forgetLater(p, begun.id);
    await this.evictionIfDue(meta.config, meta.watermark, watermark);
    if (outbox) await this.alarms.flush(this.outbox.pending());
    // Published soon: objects written now (the outbox's are published after their flush), and the table.
    if (!outbox || meta.config.table) await this.alarms.publish();
    if (hasIdleTimeout(meta.config)) await this.alarms.idle(meta.config, sources);
    return plan.outcomes;
  }

  /**
   * Inside a micro-batch's commit: fixes the next micro-batch (whatever has
   * queued meanwhile) and begins its members. Not for a stream with a table:
   * its members are judged by the columns known before they began, which
   * this commit's may add to.
   */
  private beginNext(meta: Meta, watermark: number, now: number): { items: Submission[]; id: string; members: Begun[] } | null {
    if (meta.config.table) return null;
    const items = this.batcher.takeNext();
    if (items.length === 0) return null;
    return { items, id: `g-${crypto.randomUUID()}`, members: items.map((it) => this.beginMember(meta, it, now, watermark)) };
  }

  /** A micro-batch the object stopped with, begun and not committed: the ledger keeps it as it keeps a failed attempt's (src/coordinator/state.ts). */
  private adopt(b: BegunGroup): void {
    if (b.at < Date.now() - LEDGER_RETENTION_MS) return; // its partitions' decisions are gone by now
    this.ledger.begin(
      b.id,
      b.members.map(([source, batchId, identity, watermark, begunAt, configVersion]) => ({ source, batchId, identity, watermark, begunAt, configVersion })),
      b.at,
    );
  }

  /** Flushes everything waiting in the outbox now (the alarm does it when due); returns the entries flushed. */
  async flush(): Promise<number> {
    const meta = this.meta();
    if (!meta) return 0;
    let flushed = 0;
    for (let n = -1; n !== 0; flushed += n) {
      n = await this.flushChunk(meta);
    }
    return flushed;
  }

  /** One chunk of the outbox to R2; the state record is written to the state row when the rows that held it go. */
  private flushChunk(meta: Meta): Promise<number> {
    return this.outbox.flush(
      this.env.SINK,
      { stream: meta.name, epoch: meta.epoch },
      (fn) => this.ctx.storage.transactionSync(fn),
      () => void this.book.write(),
    );
  }

  /** The most recent `limit` progress reports, oldest first. */
  progress(limit: number): ProgressReport[] {
    if (!this.exists) return [];
    return this.ledger.progress(limit);
  }

  /** Committed batches that wrote to `lane`, in commit order, after commit number `afterSeq`. */
  commits(lane: Lane, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[] {
    if (!this.exists) return [];
    if (isSameEventLane(lane)) return this.laneRefs.commits(lane, afterSeq, upToSeq, limit);
    return this.ledger.commits(lane, afterSeq, upToSeq, limit);
  }

  /**
   * Stores a credential. A token already given to any source of this stream is
   * refused: lookups go by its hash, so the second holder would be locked out.
   */
  addCredential(c: StoredCredential): "added" | "missing" | "duplicate" | "other-provider" {
    if (!this.meta()) return "missing";
    return this.keys.add(c);
  }

  /** Re-seals a signing secret under the current CREDENTIALS_KEY, if it is still as it was read. */
  resealCredential(id: string, from: string, to: string): void {
    if (!this.exists) return;
    this.keys.reseal(id, from, to);
  }

  /** A source's credentials, without their material when `withMaterial` is false. */
  credentials(source: string, withMaterial = false): StoredCredential[] {
    if (!this.exists) return [];
    return this.keys.list(source, withMaterial);
  }

  deleteCredential(source: string, id: string): boolean {
    if (!this.exists) return false;
    return this.keys.delete(source, id);
  }

  /** A kept copy's commit number, while the ledger remembers its batch (null: not committed, or forgotten). */
  committedSeq(source: string, batchId: string): number | null {
    if (!this.exists) return null;
    return this.ledger.row(source, batchId)?.seq ?? null;
  }

  /**
   * The stream's name, epoch, partition count and last commit number, for
   * reads; `indexedFrom`: the first commit the ledger's commit index still
   * holds (earlier ones are read from the committed manifest).
   */
  locate(): { name: string; epoch: string; incarnation: number; partitions: number; lastSeq: number; indexedFrom: number; config: StreamConfig } | null {
    const meta = this.meta();
    if (!meta) return null;
    const lastSeq = this.ledger.lastSeq();
    return {
      name: meta.name,
      epoch: meta.epoch,
      incarnation: meta.incarnation,
      partitions: meta.config.partitions,
      lastSeq,
      indexedFrom: this.ledger.indexedFrom(),
      config: meta.config,
    };
  }

  /**
   * Deletes the stream: its destinations (their pending rows, dead lanes and
   * secrets), partitions' state, the output in R2, then the ledger and config.
   * The Registry hears first that this incarnation ends, so a crash part way
   * leaves a stream a retried DELETE finishes, and a re-creation never reuses its ids.
   */
  async drop(): Promise<boolean> {
    const meta = this.meta();
    if (!meta) return false;
    await registryStub(this.env).retireIncarnation(meta.name, meta.incarnation);
    await destinationIndex(this.env, meta.name).removeMembers(meta.name);
    await Promise.all(Array.from({ length: meta.config.partitions }, (_, p) => partitionStub(this.env, meta.name, p).drop()));
    await deleteStreamObjects(this.env.SINK, meta.name);
    await this.alarms.cancel();
    this.observer.flush(); // the last commits' line, before the stream is gone
    await this.ctx.storage.deleteAll();
    this.forgetCaches();
    this.ledger.reset();
    this.book.forget();
    this.outbox.forget();
    this.preBegun = null;
    this.partitions.forgetAll(); // ledgers of the old incarnation: the new one's partitions never held them
    this.exists = false; // until an admin creates the stream anew
    this.leases.clear();
    return true;
  }

  /**
   * The one alarm does two jobs. Outbox: flush when it holds FLUSH_BYTES or
   * its oldest entry is FLUSH_AFTER_MS old. Prompt eviction: push the global
   * watermark to every partition that has a key due to expire under it.
   */
  async alarm(): Promise<void> {
    this.alarms.fired();
    const meta = this.refreshIdle();
    if (!meta) return;
    if (Alarms.flushDue(this.outbox.pending(), Date.now())) await this.flushChunk(meta);
    await this.publish(meta); // never throws: a failing publication backs off (src/output/publisher.ts)
    pokeDestinations(this.ctx, this.env, meta.name, () => this.ledger.lastSeq()); // a poke lost to a crash after its commit
    if (meta.config.mode !== "global") await this.evictDue(meta);
    const now = this.meta();
    if (!now || now.epoch !== meta.epoch) return; // dropped meanwhile
    await this.alarms.prune(this.pruneLedger(now));
    await this.alarms.flush(this.outbox.pending());
    // The table catches up in steps; the manifest follows flushes (each flush's alarm publishes it).
    // A publication that failed is tried again when its backoff ends, not sooner.
    const guard = new PublishGuard(this.sql);
    if (now.config.table && this.ledger.lastSeq() > this.metaStore.published("table") && !guard.failure("table")) await this.alarms.publish();
    const retryAt = guard.nextAttemptAt();
    if (retryAt !== null) await this.alarms.by(retryAt);
    // Commits that landed during the fan-out may have moved the watermark again.
    await this.evictionIfDue(now.config, meta.watermark, now.watermark);
    if (hasIdleTimeout(now.config)) await this.alarms.idle(now.config, this.sourceProgress());
  }

  /**
   * Forgets, in one bounded step (src/coordinator/window.ts), the committed
   * groups past the idempotency window that a retry can no longer change, and
   * begin records older than the partitions keep decisions. Returns when the
   * next step is due by the clock (null: a commit, the watermark or a
   * publication brings the alarm back).
   */
  private pruneLedger(meta: Meta): number | null {
    const now = Date.now();
    // The oldest group stays until its window has passed, whatever else happens: until then there is nothing to read (the alarm runs every
    // few hundred ms under load, and this read was most of its rows read).
    const step = now < this.pruneNotBefore ? { upTo: null, retryAt: this.pruneNotBefore } : this.nextPruneStep(meta, now);
    this.committing(() => {
      if (step.upTo !== null) {
        this.ledger.prune(step.upTo);
        this.laneRefs.prune(step.upTo);
      }
      this.ledger.pruneBegun(now - LEDGER_RETENTION_MS);
    });
    if (step.upTo !== null) this.forgetCaches();
    return step.retryAt;
  }

  /** One prune step as the window decides it (src/coordinator/window.ts); one held back by the clock alone is not looked at again before its time. */
  private nextPruneStep(meta: Meta, now: number): { upTo: number | null; retryAt: number | null } {
    const published = meta.config.table
      ? Math.min(this.metaStore.published("manifest"), this.metaStore.published("table"))
      : this.metaStore.published("manifest");
    const step = pruneStep(this.ledger.oldest(PRUNE_STEP_GROUPS), {
      now,
      window: idempotencyWindowOf(meta.config),
      mode: meta.config.mode,
      watermark: meta.watermark,
      publishedUpTo: published,
    });
    this.pruneNotBefore = step.upTo === null && step.retryAt !== null && step.retryAt > now ? step.retryAt : 0;
    return step;
  }

  /** The meta row after sources that have turned idle left the watermark (which may then advance). */
  private refreshIdle(): Meta | null {
    const meta = this.meta();
    if (!meta || !hasIdleTimeout(meta.config)) return meta;
    const watermark = globalWatermark(meta.config, this.sourceProgress(), meta.watermark, Date.now());
    if (watermark === meta.watermark) return meta;
    this.metaStore.setWatermark(watermark);
    this.forgetCaches();
    return this.meta();
  }

  /** For GET /v1/streams: cheap (no partition calls; state as the partitions last reported). */
  summary(): { createdAt: number; watermark: number; state: { rows: number; bytes: number }; batches: { committed: number } } | null {
    const meta = this.meta();
    if (!meta) return null;
    return { createdAt: meta.createdAt, watermark: meta.watermark, state: this.partitions.totals(), batches: { committed: this.ledger.lastSeq() } };
  }

  /** For GET /metrics: the counters kept at each commit, the watermarks and the state size. */
  metrics(): StreamMetrics | null {
    const meta = this.meta();
    if (!meta) return null;
    const progress = this.sourceProgress();
    const sources: Record<string, number> = {};
    for (const s of new Set([...Object.keys(meta.config.sources), ...Object.keys(progress)])) {
      sources[s] = sourceWatermark(meta.config, s, own(progress, s));
    }
    const counters = this.counters.all();
    const { bytes, batchesRemembered } = this.bookkeeping(meta);
    return streamMetricsOf(meta.name, counters, {
      watermark: meta.watermark,
      sources,
      state: this.partitions.totals(),
      bookkeeping: { bytes, batchesRemembered },
    });
  }

  /** For GET /v1/streams/{stream}/advice: the delay advisor over the live figures (src/stream/advisor/live.ts). */
  advice(): LiveAdvice | null {
    const meta = this.meta();
    return meta ? liveAdvice(this.figures.all(), meta.config, undefined, this.webhookFloors()) : null;
  }

  /** Per webhook source (one with a provider credential), the least delay the advisor may propose: its provider's retry horizon. */
  private webhookFloors(): Map<string, DelayFloor> {
    const floors = new Map<string, DelayFloor>();
    for (const [source, provider] of this.keys.providers()) {
      if (RETRY_HORIZON_MS[provider] > 0) floors.set(source, { ms: RETRY_HORIZON_MS[provider], reason: horizonReason(provider) });
    }
    return floors;
  }

  /** The committed manifest and, when configured, the Iceberg table catch up with the commits (src/output/publisher.ts). */
  private async publish(meta: Meta): Promise<void> {
    const ctx: PublishContext = {
      stream: meta.name,
      epoch: meta.epoch,
      config: meta.config,
      bucket: this.env.SINK,
      lastSeq: this.ledger.lastSeq(),
      commits: (after, upTo, limit) => this.commits("data", after, upTo, limit),
      laneCommits: (lane, after, upTo, limit) => this.commits(lane, after, upTo, limit),
      progress: (what) => this.metaStore.published(what),
      setProgress: (what, seq) => this.metaStore.setPublished(what, seq),
    };
    // Each publication on its own: one that throws is recorded and retried later, and takes nothing else with it.
    const guard = new PublishGuard(this.sql);
    // The manifest lists objects: commits still in the outbox wait for its flush, so it reads no further than the first of them (not their bytes).
    const waiting = this.outbox.firstSeq();
    await guard.attempt("manifest", Date.now(), () => publishManifest(waiting === null ? ctx : { ...ctx, lastSeq: Math.min(ctx.lastSeq, waiting - 1) }));
    const table = await guard.attempt("table", Date.now(), () => publishTable(ctx, Date.now()));
    if (table?.columns && this.meta()?.epoch === meta.epoch) recordColumns(this.sql, table.columns, Date.now());
  }

  /** A stream with a table: each member is to be judged by the columns known before it began (src/table/known-columns.ts). */
  private withTableColumns<M extends BegunMember>(members: M[]): M[] {
    const known = new Map<number, string[]>(); // first attempts share their begin time: one read for them all
    const before = (at: number) => known.get(at) ?? known.set(at, columnsKnownBefore(this.sql, at)).get(at)!;
    return members.map((m) => (m.config.table ? { ...m, tableColumns: before(m.begunAt) } : m));
  }

  /** For GET …/table and …/health: how far the table has got, and whether appending to it keeps failing. */
  tablePublishing(): TablePublishing | null {
    const meta = this.meta();
    if (!meta?.config.table) return null;
    return tablePublishingOf(this.metaStore.published("table"), this.ledger.lastSeq(), new PublishGuard(this.sql).failure("table"));
  }

  /**
   * How far the committed output is readable outside (read-only): the last
   * commit, and the last commit the manifest and the table (null: none
   * configured) hold. A file run is done only once they hold its commits
   * (src/sources/files/runner.ts), as Spark's processAllAvailable().
   */
  publication(): { epoch: string; committed: number; manifest: number; table: number | null } | null {
    const meta = this.meta();
    if (!meta) return null;
    const published = (what: "table" | "manifest") => this.metaStore.published(what);
    return { epoch: meta.epoch, committed: this.ledger.lastSeq(), manifest: published("manifest"), table: meta.config.table ? published("table") : null };
  }

  /**
   * The eviction fan-out, when the watermark moved and some partition holds
   * a key due under it (its reported next expiry, a lower bound). A stream
   * whose keys outlive the moves (a watermark moving at every commit, keys
   * kept an hour) would otherwise run the alarm every EVICTION_DELAY_MS to
   * visit no partition.
   */
  private async evictionIfDue(config: StreamConfig, before: number, after: number): Promise<void> {
    if (after > before && this.partitions.due(after).length > 0) await this.alarms.eviction(config);
  }

  /** Pushes the watermark to the partitions with a key due under it (PartitionBook.due) and records what they report. */
  private async evictDue(meta: Meta): Promise<void> {
    const watermark = meta.watermark;
    const results = await Promise.all(
      this.partitions.due(watermark).map(async (p) => ({ p, ...(await partitionStub(this.env, meta.name, p).advance(meta.epoch, watermark)) })),
    );
    const now = this.meta();
    if (!now || now.epoch !== meta.epoch || results.length === 0) return;
    this.partitions.record(results);
    this.book.write();
  }

  /**
   * The stream's meta (src/coordinator/meta.ts), its watermark the larger of
   * meta's and the newest state record's. Reading it reads the state record
   * too, outside any transaction, so that a micro-batch the object left begun
   * is handed to the ledger (state()) before anything else is written.
   */
  private meta(): Meta | null {
    if (!this.exists) return null;
    const row = this.metaStore.read();
    if (!row) return null;
    const { metaWatermark, ...rest } = row;
    return { ...rest, watermark: Math.max(metaWatermark, this.book.current().watermark) };
  }

  private forgetCaches(): void {
    this.metaStore.forget();
    this.ledger.forget();
    this.pruneNotBefore = 0; // the window or the watermark may have changed
  }

  private sourceProgress(): Record<string, SourceProgress> {
    return this.book.sources();
  }
}

/** How many partitions store keys by the unkeyed hash of an earlier release (health warns: src/stream/health.ts), when any do. */
function unkeyedHash(stats: readonly { unkeyedHash?: true }[]): { unkeyedHashPartitions?: number } {
  const n = stats.filter((s) => s.unkeyedHash).length;
  return n > 0 ? { unkeyedHashPartitions: n } : {};
}

/** Whether the batcher runs the micro-batch a commit began (takeNext's items, in order). */
const sameItems = (a: readonly Submission[], b: readonly Submission[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** A micro-batch's begin as a state record carries it. */
function begunGroup(id: string, members: readonly Begun[], at: number): BegunGroup {
  return { id, at, members: members.map((m) => [m.source, m.batchId, m.identity, m.watermark, m.begunAt, m.configVersion]) };
}

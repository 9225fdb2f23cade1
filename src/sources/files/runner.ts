import type { IngestRequest } from "../../coordinator/protocol";
import { submitBatch } from "../../ingest/submit";
import { hearShards, ShardRouter } from "../../ingest/shard-router";
import { resultOf } from "../../ingest/result";
import { coordinatorStub, type Env } from "../../env";
import type { Migration } from "../../storage/migrations";
import { SqliteObject } from "../../storage/sqlite-object";
import { sourceConfig } from "../../stream/config";
import type { BatchOutcome } from "../../stream/batch-outcome";
import { readObjectBatch, type ObjectBatch } from "./object";
import {
  addFailed,
  addOutcome,
  addSkipped,
  ALARM_BUDGET_MS,
  FILES_PER_ALARM,
  groupsOf,
  fileVerdict,
  judgeError,
  type FileProblem,
  keepError,
  LIST_PAGE,
  MAX_TRANSIENT_ATTEMPTS,
  needsListing,
  planPage,
  heard,
  publicationLag,
  publicationState,
  publicationWait,
  PUBLISH_POLL_MS,
  retryDelayMs,
  takeSlice,
  type RunTotals,
  type RunView,
} from "./plan";
import { snapshotOf } from "./publication";
import type { RunOptions } from "./run-body";
import type { RunnerRpc } from "./protocol";
import { cleanSource } from "./clean-source";
import { IngestedVersions } from "./ingested";
import { RunnerMeta } from "./meta";
import { RunFiles, type RunFile } from "./run-files";
import { runView } from "./run-view";
import { Runs, type Run } from "./runs";

/**
 * The Runner's storage layouts, oldest first (src/storage/migrations.ts); they
 * run once a run or a record exists. Storage from before versions were
 * recorded (version 0) has the tables already: version 1 leaves them as they
 * are and version 2 adds what they lack.
 */
export const RUNNER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "the stream's name, runs, their pending files, the ingested object versions",
    up: (sql) =>
      sql.exec(`
        CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), stream TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, prefix TEXT NOT NULL, source TEXT NOT NULL, epoch TEXT NOT NULL,
          status TEXT NOT NULL, cursor TEXT, listed INTEGER NOT NULL, totals TEXT NOT NULL, errors TEXT NOT NULL, attempts INTEGER NOT NULL,
          started_at INTEGER NOT NULL, finished_at INTEGER, options TEXT NOT NULL DEFAULT '{}', publication TEXT);
        CREATE TABLE IF NOT EXISTS run_files (run_id TEXT NOT NULL, n INTEGER NOT NULL, key TEXT NOT NULL, etag TEXT NOT NULL, size INTEGER NOT NULL,
          PRIMARY KEY (run_id, n)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS done_files (epoch TEXT NOT NULL, key TEXT NOT NULL, etag TEXT NOT NULL, at INTEGER NOT NULL,
          PRIMARY KEY (epoch, key, etag)) WITHOUT ROWID;
      `),
  },
  {
    version: 2,
    does: "runs.options and runs.publication on runs tables created before them (guarded: newer ones have them)",
    up: (sql) => {
      const have = new Set(
        sql
          .exec<{ name: string }>("SELECT name FROM pragma_table_info('runs')")
          .toArray()
          .map((c) => c.name),
      );
      if (!have.has("options")) sql.exec("ALTER TABLE runs ADD COLUMN options TEXT NOT NULL DEFAULT '{}'");
      if (!have.has("publication")) sql.exec("ALTER TABLE runs ADD COLUMN publication TEXT");
    },
  },
];

/**
 * One per stream (named after it): its file runs (POST …/runs) and the record
 * of the input object versions it has ingested. Alarm-driven: each alarm lists
 * at most one page of the oldest running run's prefix and ingests a bounded
 * slice of its pending objects through submitBatch, recording each object's
 * result durably before the next, so a crash anywhere resumes where it left
 * off and re-processes at most the object in hand (a replay: same batch id).
 * The planning is in ./plan.ts; its tables are ./runs.ts, ./run-files.ts,
 * ./ingested.ts and ./meta.ts.
 */
export class Runner extends SqliteObject<Env> implements RunnerRpc {
  private stepping = false;
  private readonly meta = new RunnerMeta(this.sql);
  private readonly runs = new Runs(this.sql);
  private readonly files = new RunFiles(this.sql);
  private readonly ingested = new IngestedVersions(this.sql);

  constructor(ctx: DurableObjectState, env: Env) {
    // Tables only once a run or a record exists: GETs of made-up run ids leave nothing behind.
    super(ctx, env, { migrations: RUNNER_MIGRATIONS, countAs: "Runner", countCalls: true, createdWith: "runs" });
  }

  private setUp(stream: string): void {
    this.ensureStorage();
    this.meta.setStream(stream);
  }

  /** Starts a run over `prefix` (its stream at `epoch`); runs of one stream go one after another, oldest first. */
  async start(stream: string, epoch: string, prefix: string, source: string, options: RunOptions = {}): Promise<string> {
    this.setUp(stream);
    const id = `run_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
    const now = Date.now();
    this.runs.add(id, prefix, source, epoch, options, now);
    this.ingested.forgetOtherEpochs(epoch);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(now);
    return id;
  }

  async view(id: string): Promise<RunView | null> {
    if (!this.exists) return null;
    const run = this.runs.get(id);
    if (!run) return null;
    // Self-healing: a running run always has an alarm coming (should one ever be lost, a look brings it back).
    if (run.status === "running" && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
    return runView(run, this.files.count(id));
  }

  /** Object versions ingested another way (an R2 event notification): a later run skips them. */
  async recordDone(stream: string, files: { key: string; etag: string }[]): Promise<void> {
    const where = await coordinatorStub(this.env, stream).locate();
    if (!where || files.length === 0) return;
    this.setUp(stream);
    const now = Date.now();
    this.ingested.addAll(where.epoch, files, now);
  }

  async alarm(): Promise<void> {
    // One step at a time (a test's runDurableObjectAlarm may meet the scheduled one); the running step reschedules.
    if (!this.exists || this.stepping) return;
    this.stepping = true;
    try {
      await this.alarmStep();
    } finally {
      this.stepping = false;
    }
  }

  private async alarmStep(): Promise<void> {
    const run = this.runs.oldestRunning();
    if (!run) return;
    const next = await this.step(run);
    const more = next ?? (this.runs.anyRunning() ? Date.now() : null);
    if (more !== null) await this.ctx.storage.setAlarm(more);
  }

  /** One alarm's work on a run; returns when the next alarm should come for it (null: the run ended). */
  private async step(run: Run): Promise<number | null> {
    const stream = this.meta.stream();
    const coordinator = coordinatorStub(this.env, stream);
    const router = new ShardRouter(this.env, stream, coordinator); // the admission below tells it the stream's shards
    const deadline = Date.now() + ALARM_BUDGET_MS;
    if (run.publication) return this.awaitPublication(run, stream);
    let limits;
    let multiLine = run.options.multiLine;
    try {
      const [where, admission] = await Promise.all([coordinator.locate(), coordinator.admit(run.source, { kind: "admin" })]);
      if (!where || where.epoch !== run.epoch) return this.finish(run, "failed", { key: "", detail: `stream "${stream}" was deleted` });
      if (admission.kind !== "admitted") {
        return this.finish(run, "failed", { key: "", detail: admission.kind === "forbidden" ? admission.detail : `stream "${stream}" refused the run` });
      }
      limits = admission.limits;
      hearShards(stream, admission.shards ?? 1);
      // The run's own multiLine, else its source's (a declared source may say how its files are written).
      multiLine ??= sourceConfig(where.config, run.source)?.multiLine;
      if (needsListing(this.files.count(run.id), run.listed === 1)) await this.listPage(run);
    } catch (e) {
      return this.transient(run, "", e);
    }
    const perTrigger = run.options.maxFilesPerTrigger ?? 1;
    const perAlarm = Math.max(FILES_PER_ALARM, perTrigger);
    const files = this.files.next(run.id, perAlarm);
    const take = takeSlice(files, perAlarm);
    const read = (f: RunFile) => readObjectBatch(this.env.INPUT, f.key, run.source, limits, (s, b) => router.knownBatch(s, b), { multiLine });
    for (const [g, group] of groupsOf(files.slice(0, take), perTrigger).entries()) {
      if (g > 0 && Date.now() >= deadline) break;
      const batches: { f: RunFile; r: Extract<ObjectBatch, { kind: "batch" }> }[] = [];
      for (const f of group) {
        const outcome = await this.attempt(run, f, async () => {
          const r = await read(f);
          if (r.kind === "gone") this.fileFailed(run, f.n, f.key, "the object was deleted before the run read it");
          else batches.push({ f, r });
        });
        if (outcome !== undefined) return outcome;
      }
      // One micro-batch (one commit) for the group (one per shard it spans); a file the Coordinator did not take goes alone, for its own answer.
      const together = batches.length > 1 ? await router.ingestMany(batches.map(({ r }): IngestRequest => r.batch)).catch(() => null) : null;
      for (const [i, { f, r }] of batches.entries()) {
        const answer = together?.[i];
        const outcome = await this.attempt(run, f, async () => {
          const result =
            answer && (answer.kind === "done" || answer.kind === "replay")
              ? resultOf(answer, stream, r.batch.batchId, r.batch.sourceHeader)
              : await submitBatch(this.env, stream, r.batch, router);
          const v = fileVerdict(result);
          if (v.kind !== "done") return v;
          this.fileDone(run, f.n, f.key, r.etag, v.outcome);
          await cleanSource(this.env.INPUT, run, f.key, r.etag);
        });
        if (outcome !== undefined) return outcome;
      }
    }
    if (run.listed === 1 && this.files.count(run.id) === 0) return this.beginPublication(run, stream);
    return Date.now();
  }

  /** Runs one file's work; an error settles the file (failed), ends the run, or retries it later: that answer, else undefined. */
  private async attempt(run: Run, f: RunFile, work: () => Promise<FileProblem | void>): Promise<number | null | undefined> {
    let j: FileProblem;
    try {
      const problem = await work();
      if (!problem) return undefined;
      j = problem;
    } catch (e) {
      j = judgeError(e);
    }
    if (j.kind === "file") {
      this.fileFailed(run, f.n, f.key, j.detail);
      return undefined;
    }
    if (j.kind === "run") return this.finish(run, "failed", { key: f.key, detail: j.detail });
    return this.transient(run, f.key, j.detail);
  }

  /** Every file is settled: note the last commit; done waits until it is readable everywhere the stream writes. */
  private async beginPublication(run: Run, stream: string): Promise<number | null> {
    let p;
    try {
      const coordinator = coordinatorStub(this.env, stream);
      p = await coordinator.publication();
      // Rows still in the outbox reach R2 now (the manifest lists only what is there), not when it fills.
      if (p && p.manifest < p.committed) await coordinator.flush();
    } catch (e) {
      return this.transient(run, "", e);
    }
    if (!p || p.epoch !== run.epoch) return this.finish(run, "failed", { key: "", detail: `stream "${stream}" was deleted` });
    run.publication = publicationWait(p, Date.now());
    this.runs.beginPublication(run);
    return this.awaitPublication(run, stream);
  }

  private async awaitPublication(run: Run, stream: string): Promise<number | null> {
    const wait = run.publication!;
    try {
      const p = await coordinatorStub(this.env, stream).publication();
      if (!p || p.epoch !== run.epoch) return this.finish(run, "failed", { key: "", detail: `stream "${stream}" was deleted` });
      heard(wait, p);
      const state = publicationState(wait, Date.now());
      if (state === "published" && wait.table !== null) wait.snapshot = await snapshotOf(this.env, stream);
      this.runs.savePublication(run.id, wait);
      if (state === "published") return this.finish(run, "done");
      if (state === "timed-out") return this.finish(run, "failed", { key: "", detail: publicationLag(wait) });
      return Date.now() + PUBLISH_POLL_MS;
    } catch (e) {
      return this.transient(run, "", e);
    }
  }

  /** Lists the next page into the run's pending files; versions this stream has ingested count as skipped. */
  private async listPage(run: Run): Promise<void> {
    const page = await this.env.INPUT.list({ prefix: run.prefix, cursor: run.cursor ?? undefined, limit: LIST_PAGE });
    const isDone = (key: string, etag: string) => this.ingested.has(run.epoch, key, etag);
    const { pending, skipped } = planPage(
      page.objects.map((o) => ({ key: o.key, etag: o.etag, size: o.size })),
      isDone,
    );
    run.totals = addSkipped(run.totals, skipped.length);
    run.cursor = page.truncated ? page.cursor : null;
    run.listed = page.truncated ? 0 : 1;
    this.ctx.storage.transactionSync(() => {
      this.files.append(run.id, pending);
      this.runs.saveListing(run);
    });
  }

  /**
   * One transaction per object: its result, the run's totals, and (ingested)
   * the stream's record of it. Totals are read back inside it, and an object
   * already settled adds nothing (alarms are at-least-once).
   */
  private fileDone(run: Run, n: number, key: string, etag: string, outcome: BatchOutcome): void {
    this.settleFile(
      run,
      n,
      (t) => addOutcome(t, outcome),
      () => this.ingested.add(run.epoch, key, etag, Date.now()),
    );
  }

  private fileFailed(run: Run, n: number, key: string, detail: string): void {
    this.settleFile(run, n, addFailed, undefined, (errors) => keepError(errors, key, detail));
  }

  private settleFile(run: Run, n: number, add: (t: RunTotals) => RunTotals, also?: () => void, errors?: (e: Run["errors"]) => Run["errors"]): void {
    this.ctx.storage.transactionSync(() => {
      if (!this.files.settle(run.id, n)) return;
      const now = this.runs.current(run.id);
      run.totals = add(now.totals);
      run.errors = errors ? errors(now.errors) : now.errors;
      run.attempts = 0;
      also?.();
      this.runs.saveSettled(run);
    });
  }

  /** A failure that may pass: the same object again later, with backoff; the run fails after MAX_TRANSIENT_ATTEMPTS. */
  private transient(run: Run, key: string, e: unknown): number | null {
    const detail = e instanceof Error ? e.message : String(e);
    const attempts = run.attempts + 1;
    if (attempts >= MAX_TRANSIENT_ATTEMPTS) return this.finish(run, "failed", { key, detail: `gave up after ${attempts} attempts: ${detail}` });
    console.warn(`run ${run.id}: ${key || "listing"}: ${detail}; retrying`);
    this.runs.setAttempts(run.id, attempts);
    return Date.now() + retryDelayMs(attempts);
  }

  private finish(run: Run, status: "done" | "failed", error?: { key: string; detail: string }): null {
    const errors = error ? keepError(run.errors, error.key, error.detail) : run.errors;
    this.ctx.storage.transactionSync(() => {
      this.files.clear(run.id);
      this.runs.finish(run.id, status, errors, Date.now());
    });
    return null;
  }
}

import type { StoredCredential } from "../credentials/credential";
import type { WatermarkPush } from "../clock/protocol";
import type { Env } from "../env";
import type { Lane } from "../output/sink";
import type { TablePublishing } from "../output/publisher";
import { SqliteObject } from "../storage/sqlite-object";
import type { LiveAdvice } from "../stream/advisor/live";
import type { StreamConfig } from "../stream/config";
import type { ShardChange } from "../stream/shard-change";
import type { StreamMetrics } from "../stream/metrics";
import type { ProgressReport } from "../stream/batch-outcome";
import { Callers } from "./callers";
import { ClockLink } from "./clock-link";
import { addOnEveryShard, deleteOnEveryShard } from "./other-shards";
import type { ShardFigures } from "./shard-figures";
import { Intake } from "./intake";
import { Lifecycle } from "./lifecycle";
import { COORDINATOR_MIGRATIONS } from "./migrations";
import type {
  Admission,
  CallerClaim,
  ConfigureResult,
  CoordinatorRpc,
  FailedRun,
  IngestRequest,
  IngestResult,
  MapVersion,
  NotKnown,
  RescaleAnswer,
  ShardMap,
  StreamDescription,
  StreamLocation,
  StreamPublication,
  StreamSummary,
  WrongShard,
} from "./protocol";
import { StreamReads } from "./reads";
import { Rescaling } from "./rescaling";
import { ShardCount } from "./shard-count";
import { CoordinatorStores } from "./stores";
import { Upkeep } from "./upkeep";

/**
 * One per stream: config, per-source progress, the global watermark, the
 * batch ledger and the eviction fan-out to partitions. A thin shell: each
 * call goes to the room beside it that does the work — batches in
 * (./intake.ts), the alarm's jobs (./upkeep.ts), reads (./reads.ts), callers
 * and credentials (./callers.ts), creation and deletion (./lifecycle.ts) —
 * over the stores they share (./stores.ts).
 */
export class Coordinator extends SqliteObject<Env> implements CoordinatorRpc {
  private readonly intake: Intake;
  private readonly upkeep: Upkeep;
  private readonly reads: StreamReads;
  private readonly callers: Callers;
  private readonly lifecycle: Lifecycle;
  private readonly stores: CoordinatorStores;
  private readonly clock: ClockLink;
  private readonly rescaling: Rescaling;

  constructor(ctx: DurableObjectState, env: Env) {
    // Whether this stream exists is whether its tables do (`exists`): the schema is created
    // only when an admin creates the stream, so requests naming streams that do not exist
    // (with made-up credentials, say) leave no storage behind.
    super(ctx, env, { migrations: COORDINATOR_MIGRATIONS, countAs: "Coordinator", countCalls: true, createdWith: "meta" });
    const stores = new CoordinatorStores(this.sql, ctx.storage, env, () => this.exists);
    this.stores = stores;
    this.clock = new ClockLink(stores, this.env, (meta, before, after) => this.upkeep.evictionIfDue(meta.config, before, after));
    this.upkeep = new Upkeep(stores, ctx, this.env, this.clock, () => this.rescaling.step());
    this.intake = new Intake(stores, ctx, this.env, this.upkeep, this.clock, (to) => this.rescaling.refresh(to));
    this.rescaling = new Rescaling(stores, this.env, (fn) => this.intake.between(fn));
    this.reads = new StreamReads(stores, this.env, () => this.rescaling.stepsSettled());
    this.callers = new Callers(stores);
    this.lifecycle = new Lifecycle(stores, this.env, this.upkeep, {
      createStorage: () => {
        this.migrate();
        this.exists = true;
      },
      storageDeleted: () => void (this.exists = false), // until an admin creates the stream anew
      forgetInflight: () => (this.intake.forget(), this.clock.forget()),
      deleteAll: () => ctx.storage.deleteAll(),
    });
  }

  // Creation and deletion (./lifecycle.ts)
  configure(name: string, config: StreamConfig): Promise<ConfigureResult> {
    return this.lifecycle.configure(name, config);
  }
  drop(): Promise<boolean> {
    return this.lifecycle.drop();
  }
  configureShard(
    name: string,
    config: StreamConfig,
    shard: { index: number; epoch: string; incarnation: number },
    change?: ShardChange,
  ): Promise<ConfigureResult> {
    return this.lifecycle.configureShard(name, config, shard, change);
  }
  dropShard(): Promise<void> {
    return this.lifecycle.dropShard();
  }
  rescale(to: number | { shards: number }): Promise<RescaleAnswer> {
    if (typeof to === "number") return this.rescaling.start(to);
    return new ShardCount(this.stores, this.env).change(to.shards).catch((e: Error): RescaleAnswer => ({ kind: "failed", detail: e.message }));
  }
  switchedMap(epoch: string, to: MapVersion): Promise<ShardMap | null> {
    return this.rescaling.switchedMap(epoch, to);
  }
  adoptMap(epoch: string, map: ShardMap): Promise<void> {
    return this.intake.between(async () => this.rescaling.adopt(epoch, map));
  }

  // The stream's clock (./clock-link.ts), telling a shard that has not asked lately
  async applyWatermark(push: WatermarkPush): Promise<void> {
    const meta = this.stores.meta();
    if (meta?.epoch === push.epoch) await this.clock.told(meta, push.watermark);
  }

  // Who may send (./callers.ts)
  admit(sourceHeader: string | null, claim: CallerClaim): Admission {
    return this.callers.admit(sourceHeader, claim);
  }
  noteWebhooks(source: string, deltas: [string, number][]): void {
    this.callers.noteWebhooks(source, deltas);
  }
  knownBatch(source: string, batchId: string): boolean {
    return this.callers.knownBatch(source, batchId);
  }
  addCredential(c: StoredCredential): Promise<"added" | "missing" | "duplicate" | "other-provider"> {
    return addOnEveryShard(this.env, this.stores.meta(), this.callers, c);
  }
  resealCredential(id: string, from: string, to: string): void {
    this.callers.resealCredential(id, from, to);
  }
  credentials(source: string, withMaterial = false): StoredCredential[] {
    return this.callers.credentials(source, withMaterial);
  }
  deleteCredential(source: string, id: string): Promise<boolean> {
    return deleteOnEveryShard(this.env, this.stores.meta(), this.callers, source, id);
  }

  // Batches in (./intake.ts)
  /** One batch; a failed micro-batch is thrown (the Worker calls ingestMany, which answers it as a value: a throwing RPC method is logged as uncaught). */
  async ingest(req: IngestRequest): Promise<IngestResult> {
    const [r] = await this.intake.ingestMany([req]);
    if (r.kind === "failed") throw new Error(r.message);
    if (r.kind === "moved") throw new Error(`this shard does not judge batch ${req.batchId}`);
    return r;
  }
  ingestMany(reqs: IngestRequest[], deadline?: number): Promise<(IngestResult | FailedRun | WrongShard)[]> {
    return this.intake.ingestMany(reqs, deadline);
  }
  recall(req: IngestRequest, deadline: number): Promise<IngestResult | FailedRun | NotKnown> {
    return this.intake.recall(req, deadline);
  }

  // Between requests (./upkeep.ts)
  alarm(): Promise<void> {
    return this.upkeep.alarm();
  }
  flush(): Promise<number> {
    return this.upkeep.flush();
  }

  // Reads, one per question (./reads.ts)
  describe(): Promise<StreamDescription | null> {
    return this.reads.describe();
  }
  summary(): Promise<StreamSummary | null> {
    return this.reads.summary();
  }
  locate(): StreamLocation | null {
    return this.reads.locate();
  }
  metrics(): Promise<StreamMetrics | null> {
    return this.reads.metrics();
  }
  shardFigures(): ShardFigures | null {
    return this.reads.shardFigures();
  }
  advice(): Promise<LiveAdvice | null> {
    return this.reads.advice();
  }
  adviceFigures(): string {
    return this.reads.adviceFigures();
  }
  tablePublishing(): Promise<TablePublishing | null> {
    return this.reads.tablePublishing();
  }
  publication(): Promise<StreamPublication | null> {
    return this.reads.publication();
  }
  progress(limit: number): Promise<ProgressReport[]> {
    return this.reads.progress(limit);
  }
  commits(lane: Lane, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[] {
    return this.stores.commits(lane, afterSeq, upToSeq, limit);
  }
  committedSeq(source: string, batchId: string): number | null {
    return this.stores.committedSeq(source, batchId);
  }
}

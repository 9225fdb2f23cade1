import type { Env } from "../env";
import { CommitObserver } from "../instrument/observe";
import { Outbox } from "../output/outbox";
import type { Lane } from "../output/sink";
import { LEDGER_RETENTION_MS } from "../partition/protocol";
import { seqBase } from "../stream/shards";
import type { SourceProgress } from "../stream/watermark";
import type { AdviceFigures } from "./advice";
import { Alarms } from "./alarms";
import type { MetricCounters } from "./counters";
import { CredentialStore } from "./credentials";
import { isSameEventLane, LaneRefs } from "./lane-refs";
import { BatchLedger } from "./ledger";
import { MetaStore, type Meta } from "./meta";
import type { PartitionBook } from "./partitions";
import { StateBook, type BegunGroup } from "./state";

/**
 * One stream's Coordinator storage, as the rooms of src/coordinator/ share
 * it: each store over the object's SQLite, the alarm, the commit log, the
 * meta read, and what a rollback or a drop forgets. The Coordinator class
 * makes one and hands it to its rooms (intake, upkeep, reads, callers,
 * lifecycle); none of them keeps storage of its own.
 */
export class CoordinatorStores {
  readonly outbox: Outbox;
  /** the batch ledger (./ledger.ts) */
  readonly ledger: BatchLedger;
  /** the stream's ingest credentials (./credentials.ts) */
  readonly credentials: CredentialStore;
  /** the state record and the figures it carries (./state.ts) */
  readonly book: StateBook;
  /** the delay advisor's live figures (./advice.ts) */
  readonly figures: AdviceFigures;
  /** the partitions' last figures and forget-lists (./partitions.ts) */
  readonly partitions: PartitionBook;
  /** the commit index of the conflicts and duplicates lanes (./lane-refs.ts) */
  readonly laneRefs: LaneRefs;
  /** the counters of /metrics (./counters.ts) */
  readonly counters: MetricCounters;
  /** the meta row, config versions and publication progress (./meta.ts) */
  readonly metaStore: MetaStore;
  /** the one alarm and its jobs (./alarms.ts) */
  readonly alarms: Alarms;
  /** the commit log line and data point (src/instrument/observe.ts) */
  readonly observer: CommitObserver;
  /** the stream's clock's watermark, as this shard last heard it (a stream with several shards: ./clock-link.ts); a commit stores it in its state record */
  clockWatermark = 0;
  /** no prune step can forget anything before this (the oldest group's window ends then; 0: unknown); a config change resets it */
  pruneNotBefore = 0;

  constructor(
    readonly sql: SqlStorage,
    readonly storage: DurableObjectStorage,
    env: Env,
    /** whether the stream's tables exist (SqliteObject's `exists`) */
    readonly exists: () => boolean,
  ) {
    this.outbox = new Outbox(sql);
    this.metaStore = new MetaStore(sql);
    this.ledger = new BatchLedger(sql, this.outbox, () => seqBase(this.metaStore.read()?.shard ?? 0));
    this.credentials = new CredentialStore(sql);
    this.book = new StateBook(
      sql,
      () => this.outbox.records(),
      (b) => this.adopt(b),
    );
    this.figures = this.book.figures;
    this.partitions = this.book.partitions;
    this.laneRefs = new LaneRefs(sql, this.outbox);
    this.counters = this.book.counters;
    this.alarms = new Alarms(storage);
    this.observer = new CommitObserver(env);
  }

  /**
   * The stream's meta (./meta.ts), its watermark the larger of meta's and the
   * newest state record's. Reading it reads the state record too, outside
   * any transaction, so that a micro-batch the object left begun is handed to
   * the ledger (adopt) before anything else is written.
   */
  meta(): Meta | null {
    if (!this.exists()) return null;
    const row = this.metaStore.read();
    if (!row) return null;
    const { metaWatermark, ...rest } = row;
    return { ...rest, watermark: Math.max(metaWatermark, this.book.current().watermark, this.clockWatermark) };
  }

  sourceProgress(): Record<string, SourceProgress> {
    return this.book.sources();
  }

  /** A kept copy's commit number, while the ledger remembers its batch (null: not committed, or forgotten). */
  committedSeq(source: string, batchId: string): number | null {
    if (!this.exists()) return null;
    return this.ledger.row(source, batchId)?.seq ?? null;
  }

  /** Committed batches that wrote to `lane`, in commit order, after commit number `afterSeq`. */
  commits(lane: Lane, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[] {
    if (!this.exists()) return [];
    if (isSameEventLane(lane)) return this.laneRefs.commits(lane, afterSeq, upToSeq, limit);
    return this.ledger.commits(lane, afterSeq, upToSeq, limit);
  }

  /** After the meta row changed (config, watermark) or the ledger was pruned: read them again. */
  forgetCaches(): void {
    this.metaStore.forget();
    this.ledger.forget();
    this.pruneNotBefore = 0; // the window or the watermark may have changed
  }

  /** One storage transaction; the figures it changed in memory are read again if it rolls back. */
  transaction<T>(fn: () => T): T {
    try {
      return this.storage.transactionSync(fn);
    } catch (e) {
      this.forgetUnstored();
      throw e;
    }
  }

  /** What memory holds of storage (the state record, the ledger's last commit and begins, the outbox's waiting entries) is read again. */
  forgetUnstored(): void {
    this.book.forget();
    this.ledger.reset();
    this.outbox.forget();
  }

  /** A micro-batch the object stopped with, begun and not committed: the ledger keeps it as it keeps a failed attempt's (./state.ts). */
  private adopt(b: BegunGroup): void {
    if (b.at < Date.now() - LEDGER_RETENTION_MS) return; // its partitions' decisions are gone by now
    this.ledger.begin(
      b.id,
      b.members.map(([source, batchId, identity, watermark, begunAt, configVersion]) => ({ source, batchId, identity, watermark, begunAt, configVersion })),
      b.at,
    );
  }
}

import type { Env } from "../env";
import { SqliteObject } from "../storage/sqlite-object";
import type { DedupSettings } from "../stream/dedup";
import { rowsOf } from "../stream/row-columns";
import { DecisionLedger, pendingOf, storedPending } from "./decision-ledger";
import { Eviction } from "./eviction";
import { fixLayout, gapsOf, judgeAll, keyIdOf, NamesInUse, wantedKeys, workOf, type Entry } from "./judging";
import { KeyStore } from "./key-store";
import { adoptMoved, countedElsewhere, keysOfNextBucket, peekKeys } from "./key-moves";
import { InheritedMarks } from "./inherited-marks";
import { listKeys, lookupReceipt } from "./key-reads";
import { KEY_HASH_UNKEYED, type Held } from "./layout";
import { layoutOf, type PartitionMeta } from "./meta";
import { MetaStore } from "./meta-store";
import { FenceStore } from "./fence";
import { CallGathering } from "./call-gathering";
import { dieMidwayIfArmed } from "./midway-fault";
import { createCurrentLayout, isNewPartition, PARTITION_MIGRATIONS } from "./migrations";
import {
  type GroupApplyRequest,
  type GroupApplyResult,
  type HandOut,
  type HandOutPage,
  type LedgerEntry,
  type MovedKey,
  type MoveFigures,
  type PartitionRpc,
  type PartitionStats,
  type StateEntry,
  type StateReceipt,
} from "./protocol";
import { keptBatchesOf, openChunk, sealChunk } from "./receipts";

type Applied = GroupApplyResult & { replayed: boolean };

/** A call's reported storage size is read again once the partition's key count has moved by this many since the last reading. */
export const SIZE_EVERY_ROWS = 64;

/**
 * A SqlStorage whose statements go to `current()` at the time of each: the
 * object's `sql` may be replaced while it lives (tests count its statements
 * through a proxy put in its place), and the stores keep the handle for good.
 */
function followed(current: () => SqlStorage): SqlStorage {
  return { exec: (query: string, ...bindings: unknown[]) => current().exec(query, ...bindings) } as SqlStorage;
}

/**
 * One state partition: the remembered keys with their expiry, the partition
 * watermark (never goes back) and the per-batch decision ledger. Every method
 * runs synchronously against SQLite, so each call is atomic and calls never
 * interleave. The storage is kept by the modules beside it: the meta row
 * (meta-store.ts), the keys (key-store.ts), eviction (eviction.ts), the decision
 * ledger (decision-ledger.ts) and the receipts (receipts.ts); the judging
 * itself is pure (judging.ts).
 */
export class Partition extends SqliteObject<Env> implements PartitionRpc {
  /** what the stores beside it run their statements on: this object's `sql` as it is at each statement */
  private readonly storage = followed(() => this.sql);
  private readonly metas = new MetaStore(this.storage);
  private readonly keys = new KeyStore(this.storage);
  private readonly eviction = new Eviction(this.storage, this.keys);
  private readonly ledger = new DecisionLedger(this.storage);
  private readonly fences = new FenceStore(this.storage);
  private readonly inherited = new InheritedMarks(this.storage);
  private readonly added = (b: number, expiresAt: number) => this.eviction.added(b, expiresAt);
  /** calls arriving within a turn, judged in one transaction that writes the meta row once */
  private readonly gathering = new CallGathering<GroupApplyRequest, Applied>({
    together: (reqs) => this.atomically(() => this.metas.savedOnce(() => reqs.map((r) => this.applyOne(r)))),
    alone: (req) => this.applyOne(req),
  });
  /** the storage size as last read, and the key count then (stats()) */
  private sized: { rows: number; bytes: number } | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: PARTITION_MIGRATIONS, countAs: "Partition" });
  }

  /** A new partition gets the current layout at once; storage written before is migrated step by step. */
  protected override migrate(): void {
    if (isNewPartition(this.sql)) {
      this.ctx.storage.transactionSync(() => createCurrentLayout(this.sql));
      return;
    }
    super.migrate();
  }

  /**
   * A micro-batch's entries, judged in order against the state in a few
   * statements whatever their number: one read of the key rows the entries'
   * rows may match (feeding the duplicate check, the conflict check, the
   * gaps and the receipts), one upsert of the new keys and of the drop
   * counts of keys held before, and the meta row (which carries the ledger
   * entry and the new batches' names).
   */
  async applyGroup(req: GroupApplyRequest): Promise<Applied> {
    dieMidwayIfArmed(req, (half) => void this.applyEntries(half)); // test builds only
    return req.gather ? this.gathering.submit(req) : this.applyOne(req);
  }

  /** One call, unless this partition is fenced (checked as it is judged: a fence may come while calls gather). */
  private applyOne(req: GroupApplyRequest): Applied {
    const fence = this.fences.of(req.epoch);
    if (fence) {
      const stats = { rows: 0, bytes: 0, watermark: 0, nextExpiry: null };
      return { decisions: [], inserted: 0, removed: 0, replayed: false, ...stats, fenced: { version: fence.version, partitions: fence.partitions } };
    }
    return this.applyEntries(req);
  }

  /** An online rescale's fence (src/partition/fence.ts): this partition judges nothing from now on. */
  fence(epoch: string, successors: { version: number; partitions: number }): void {
    this.atomically(() => this.fences.set({ epoch, ...successors }));
  }

  private applyEntries(req: GroupApplyRequest): Applied {
    const entries: Entry[] = req.entries.map((e) => ({ batch: e.batch, settings: e.settings, rows: rowsOf(e.rows), resumed: e.resumed }));
    return this.atomically(() => {
      const meta = this.meta(req.epoch);
      const pending = pendingOf(meta.pending);
      let pendingChanged = this.ledger.forget(pending, req.forget);
      const recorded = this.ledger.recorded(
        entries.filter((e) => e.resumed).map((e) => e.batch),
        pending,
      );
      const openBefore = meta.open;
      const removed = this.eviction.evict(meta, req.watermark);
      const work = workOf(entries, recorded);
      const names = new NamesInUse(() => openChunk(this.storage, meta.names));
      const adopted = adoptMoved(this.keys, meta, req.inherited ?? [], entries[0]?.settings, () => names.chunk(), this.added);
      this.inherited.mark(adopted);
      const layout = fixLayout(meta, work);
      const id = keyIdOf(layout);
      const held = layout ? this.keys.read(meta, layout, wantedKeys(meta.watermark, id, work)) : new Map<string, Held>();
      const { decisions, inserted, judged, ledger } = judgeAll(meta.watermark, layout, id, held, names, work);
      if (layout) this.keys.write(meta, layout, held, (b, e) => this.eviction.added(b, e));
      const { gaps, wanted } = layout ? gapsOf(layout, id, held, work) : { gaps: work.map((): number[] => []), wanted: [] };
      const kept = layout ? keptBatchesOf(this.storage, () => names.chunk(), wanted, work.length) : [];
      if (names.open) meta.names = JSON.stringify(sealChunk(this.storage, names.open));
      if (this.ledger.record(pending, req.group, ledger)) pendingChanged = true;
      if (pendingChanged) meta.pending = storedPending(pending);
      meta.rows += inserted;
      if (adopted.length > 0 || inserted > 0 || removed > 0 || ledger.length > 0 || pendingChanged || meta.open !== openBefore) this.metas.save(meta);
      this.ledger.maybePrune();
      const replayed = judged === 0 && entries.some((e) => e.rows.length > 0);
      return { decisions, gaps, ...(kept.some((k) => k.length > 0) ? { kept } : {}), replayed, inserted, removed, ...this.stats(meta) };
    });
  }

  /** Raises the partition watermark and evicts: prompt eviction without new rows. */
  advance(epoch: string, watermark: number): PartitionStats & { removed: number } {
    return this.atomically(() => {
      const meta = this.meta(epoch);
      const before = meta.watermark;
      const openBefore = meta.open;
      const removed = this.eviction.evict(meta, watermark);
      if (removed > 0 || meta.watermark !== before || meta.open !== openBefore) this.metas.save(meta);
      this.ledger.maybePrune();
      return { removed, ...this.stats(meta) };
    });
  }

  /** Read-only: a partition that never held state for this epoch reports zeros and stays unwritten; `move`: a rescale's `elsewhere` too. */
  describe(epoch: string, move?: MoveFigures): PartitionStats {
    const meta = this.metas.current(epoch);
    if (!meta) return { rows: 0, bytes: 0, watermark: 0, nextExpiry: null };
    return {
      ...this.stats(meta, true),
      ...(meta.hashed === KEY_HASH_UNKEYED ? { unkeyedHash: true as const } : {}),
      ...(move ? { elsewhere: countedElsewhere(this.keys, this.inherited, meta, move) } : {}),
    };
  }

  /** A rescale's end: no old partition holds anything, so what was read through is forgotten as such; the figures then. */
  endMove(epoch: string): PartitionStats {
    if (this.metas.current(epoch)) this.atomically(() => this.inherited.clear());
    return this.describe(epoch);
  }

  /** The remembered keys in key order, `limit` at a time after `after` (like Spark's state reader). */
  list(epoch: string, after: string, limit: number): StateEntry[] {
    const meta = this.metas.current(epoch);
    const l = meta && layoutOf(meta);
    return meta && l ? listKeys(this.storage, this.keys, meta, l, after, limit) : [];
  }

  /** The one remembered key `stateKey`, if it is (a list of at most one entry, as list() answers), with its receipt. */
  lookup(epoch: string, stateKey: string): StateReceipt[] {
    const meta = this.metas.current(epoch);
    const l = meta && layoutOf(meta);
    if (!meta || !l) return [];
    return lookupReceipt(this.storage, this.keys, meta, l, stateKey);
  }

  /** A text partition's next bucket of keys, each whole (./key-moves.ts), once what expired at `watermark` is evicted (nothing else calls it now). */
  handOut(epoch: string, after: number | null, page: HandOutPage | null = null, limit = 0, watermark?: number): HandOut {
    if (watermark !== undefined && (this.metas.current(epoch)?.watermark ?? watermark) < watermark) this.advance(epoch, watermark);
    const meta = this.metas.current(epoch);
    const l = meta && layoutOf(meta);
    return meta && l ? keysOfNextBucket(this.storage, this.keys, meta, l, after, page, limit) : null;
  }

  /** These state keys, those remembered, each whole (a new owner's question to an old partition in a rescale; text or hashed). Read-only. */
  peek(epoch: string, stateKeys: string[]): MovedKey[] {
    const meta = this.metas.current(epoch);
    const l = meta && layoutOf(meta);
    return meta && l ? peekKeys(this.storage, this.keys, meta, l, stateKeys) : [];
  }

  /** Keys moved here, kept as they were unless this partition remembers them (its copy wins): taking them again changes nothing. */
  takeIn(epoch: string, settings: DedupSettings, watermark: number, moved: MovedKey[]): PartitionStats & { taken: number } {
    return this.atomically(() => {
      const meta = this.meta(epoch);
      const openBefore = meta.open;
      const removed = this.eviction.evict(meta, watermark);
      const names = new NamesInUse(() => openChunk(this.storage, meta.names));
      const taken = adoptMoved(this.keys, meta, moved, settings, () => names.chunk(), this.added).length;
      if (names.open) meta.names = JSON.stringify(sealChunk(this.storage, names.open));
      if (taken > 0 || removed > 0 || meta.open !== openBefore) this.metas.save(meta);
      return { taken, ...this.stats(meta) };
    });
  }

  /** The decisions of micro-batches not yet committed (a rescale hands them to the new owners). */
  handOutDecisions(epoch: string): LedgerEntry[] {
    const meta = this.metas.current(epoch);
    return meta ? this.ledger.entries(pendingOf(meta.pending)) : [];
  }

  /** Decisions handed over by the old owners (a rescale): a retry of their batches here replays them. */
  takeDecisions(epoch: string, entries: LedgerEntry[]): void {
    this.atomically(() => {
      this.meta(epoch);
      this.ledger.take(entries);
    });
  }

  /** A moved bucket forgotten here, once its new owners keep its keys (a rescale's mover). */
  forgetBucket(epoch: string, bucket: number): PartitionStats & { removed: number } {
    return this.atomically(() => {
      const meta = this.meta(epoch);
      const l = layoutOf(meta);
      const removed = l ? this.eviction.forgetBucket(meta, l, bucket) : 0;
      if (l) this.metas.save(meta);
      return { removed, ...this.stats(meta) };
    });
  }

  async drop(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.forgetCaches();
    this.migrate(); // the instance may serve again (the stream created anew)
  }

  /** The meta row of this epoch's state; first use, or state left by a deleted incarnation of the stream, starts clean. */
  private meta(epoch: string): PartitionMeta {
    const current = this.metas.current(epoch);
    if (current) return current;
    const fresh = this.metas.begin(epoch);
    this.sized = undefined;
    this.keys.emptied();
    this.eviction.forget();
    this.ledger.emptied();
    return fresh;
  }

  private forgetCaches(): void {
    this.metas.forget();
    this.fences.forget();
    this.inherited.forget();
    this.sized = undefined;
    this.keys.forget();
    this.eviction.forget();
    this.ledger.forgetCount();
  }

  /** One storage transaction; if it rolls back, so do the cached meta row and the rest (read again next time). */
  private atomically<T>(fn: () => T): T {
    try {
      return this.ctx.storage.transactionSync(fn);
    } catch (e) {
      this.forgetCaches();
      throw e;
    }
  }

  /**
   * The figures every call reports. The storage size is read again once the
   * key count has moved by SIZE_EVERY_ROWS since it was last read (reading
   * it costs CPU on every call, for a figure that moves a few bytes a call);
   * describe() always reads it.
   */
  private stats(meta: PartitionMeta, fresh = false): PartitionStats {
    if (fresh || !this.sized || Math.abs(meta.rows - this.sized.rows) >= SIZE_EVERY_ROWS) this.sized = { rows: meta.rows, bytes: this.sql.databaseSize };
    return { rows: meta.rows, bytes: this.sized.bytes, watermark: meta.watermark, nextExpiry: meta.next_expiry };
  }
}

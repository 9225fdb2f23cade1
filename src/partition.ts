import { DurableObject } from "cloudflare:workers";
import { decideByInsert, stateKeyFor, type Decision, type DedupInput, type DedupSettings, type StateInsert } from "./stream/dedup";
import type { Env } from "./env";
import { decodeDecisions, encodeDecisions } from "./stream/ledger";
import { failAt, faultsEnabled, type FaultPoint } from "./faults";
import { countedSql } from "./opcount";
import { migrate, type Migration } from "./storage/migrations";

export interface PartitionStats {
  rows: number;
  bytes: number;
  watermark: number;
  /** the earliest expiry among the remembered keys (null: none expires): eviction visits only partitions due */
  nextExpiry: number | null;
}

/** One batch's rows for this partition (the single-batch form of applyGroup). */
export interface ApplyRequest {
  /** the stream's incarnation: state from an older one (a deleted stream) is dropped */
  epoch: string;
  /** `{source}\n{batchId}`: the decision ledger's key */
  batch: string;
  watermark: number;
  settings: DedupSettings;
  rows: PartitionRow[];
  /** tests only: store the first half of the sub-batch, then fail */
  fault?: FaultPoint;
}

/** A micro-batch's rows for this partition: an entry per request, judged in order. */
export interface GroupApplyRequest {
  epoch: string;
  watermark: number;
  entries: GroupEntry[];
  /** ledgers of batches that have committed: a retry of them never reaches a partition again */
  forget?: string[];
  /** tests only: store the first half of the first entry, then fail */
  fault?: FaultPoint;
}

export interface GroupEntry {
  batch: string;
  settings: DedupSettings;
  rows: PartitionRow[];
  /** false for a batch's first attempt: it can have no recorded decisions, so none are looked up */
  resumed?: boolean;
}

/** A row as a partition sees it: where it stood in the batch, its key and event time. */
export interface PartitionRow extends DedupInput {
  index: number;
}

export interface ApplyResult extends PartitionStats {
  /** one character per row: e(mitted), d(uplicate), l(ate) */
  decisions: string;
  replayed: boolean;
  inserted: number;
  removed: number;
}

export interface GroupApplyResult extends PartitionStats {
  /** per entry, one character per row */
  decisions: string[];
  /**
   * per entry, |T − T_first| of each duplicate to the copy kept (the delay
   * advisor's gaps), in no particular order; rows without an event time give none
   */
  gaps?: number[][];
  inserted: number;
  removed: number;
}

export interface StateEntry {
  key: string;
  eventTime: number | null;
  expiresAt: number | null;
}

/** The partition's own row: which incarnation of the stream it holds, its watermark, its key count, its earliest expiry. */
type PartitionMeta = {
  epoch: string;
  watermark: number;
  rows: number;
  next_expiry: number | null;
};

/** A row judged a duplicate: which entry, its state key and event time. */
type Duplicate = { entry: number; key: string; t: number };

/** The Partition's storage layouts, oldest first (src/storage/migrations.ts). */
export const PARTITION_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "keys with their expiry (and an expiry index), the partition's meta row, the decision ledger",
    up: (sql) =>
      sql.exec(`
        CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, watermark INTEGER NOT NULL, rows INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS keys (k TEXT PRIMARY KEY, t INTEGER, expires INTEGER) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS keys_by_expiry ON keys (expires) WHERE expires IS NOT NULL;
        CREATE TABLE IF NOT EXISTS ledger (batch TEXT PRIMARY KEY, at INTEGER NOT NULL, decisions TEXT NOT NULL) WITHOUT ROWID;
      `),
  },
  {
    version: 2,
    does: "meta.next_expiry: the earliest expiry, so that eviction runs only when something is due",
    up: (sql) => {
      // Guarded: storage from before versions were recorded may have it already.
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "next_expiry")) sql.exec("ALTER TABLE meta ADD COLUMN next_expiry INTEGER");
      sql.exec("UPDATE meta SET next_expiry = (SELECT min(expires) FROM keys)");
    },
  },
];

/** How long a batch's decisions are kept for a replay of a batch that crashed before its commit. */
export const LEDGER_RETENTION_MS = 7 * 86_400_000;
const LEDGER_PRUNE_EVERY_MS = 3_600_000;

/**
 * One state partition: the remembered keys with their expiry, the partition
 * watermark (never goes back) and the per-batch decision ledger. Every method
 * runs synchronously against SQLite, so each call is atomic and calls never
 * interleave.
 */
export class Partition extends DurableObject<Env> {
  private sql: SqlStorage;
  private lastPrune = 0;
  /** the meta row as stored: only this object writes it, so it is read once */
  private cached: PartitionMeta | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = countedSql(ctx.storage.sql, "Partition");
    this.migrate();
  }

  private migrate(): void {
    migrate(this.sql, PARTITION_MIGRATIONS, (fn) => this.ctx.storage.transactionSync(fn));
  }

  /** One batch: applyGroup with a single entry whose earlier decisions, if any, are replayed. */
  apply(req: ApplyRequest): ApplyResult {
    const { decisions, ...r } = this.applyGroup({
      epoch: req.epoch,
      watermark: req.watermark,
      entries: [{ batch: req.batch, settings: req.settings, rows: req.rows, resumed: true }],
      fault: req.fault,
    });
    return { ...r, decisions: decisions[0] };
  }

  applyGroup(req: GroupApplyRequest): GroupApplyResult & { replayed: boolean } {
    if (faultsEnabled() && req.fault === "partition-midway") {
      const [first, ...rest] = req.entries;
      this.applyGroup({ ...req, entries: [{ ...first, rows: first.rows.slice(0, Math.ceil(first.rows.length / 2)) }, ...rest].slice(0, 1), fault: undefined });
      failAt(req.fault, "partition-midway");
    }
    return this.atomically(() => {
      const meta = this.meta(req.epoch);
      if (req.forget && req.forget.length > 0) {
        this.sql.exec("DELETE FROM ledger WHERE batch IN (SELECT value FROM json_each(?))", JSON.stringify(req.forget));
      }
      const recorded = this.recordedDecisions(req.entries.filter((e) => e.resumed).map((e) => e.batch));
      const removed = this.evict(meta, req.watermark);
      let inserted = 0;
      let judged = 0;
      const ledger: [string, string][] = [];
      const duplicates: Duplicate[] = [];
      const decisions = req.entries.map((entry, e) => {
        // Rows this batch already had decided here (an attempt that crashed before
        // its commit) keep their decision; only rows new to this partition are judged.
        const known = recorded.get(entry.batch) ?? new Map<number, Decision>();
        const fresh = entry.rows.filter((r) => !known.has(r.index));
        if (fresh.length > 0 || known.size === 0) {
          const r = decideByInsert(entry.settings, meta.watermark, fresh, (candidates) => this.insertNew(candidates, meta));
          fresh.forEach((row, i) => known.set(row.index, r.decisions[i]));
          inserted += r.inserted;
          judged += fresh.length;
          ledger.push([entry.batch, encodeDecisions(known)]);
        }
        // Recorded duplicates too: their batch never committed, so the Coordinator has not counted them.
        for (const r of entry.rows) if (known.get(r.index) === "d" && r.eventTime !== null) duplicates.push({ entry: e, key: stateKeyFor(entry.settings, r), t: r.eventTime });
        return entry.rows.map((r) => known.get(r.index)!).join("");
      });
      const gaps = this.duplicateGaps(req.entries.length, duplicates);
      if (ledger.length > 0) {
        this.sql.exec(
          `INSERT OR REPLACE INTO ledger (batch, at, decisions)
           SELECT json_extract(value, '$[0]'), ?, json_extract(value, '$[1]') FROM json_each(?)`,
          Date.now(), JSON.stringify(ledger),
        );
      }
      meta.rows += inserted;
      if (inserted > 0 || removed > 0 || ledger.length > 0) this.saveMeta(meta);
      this.maybePruneLedger();
      const replayed = judged === 0 && req.entries.some((e) => e.rows.length > 0);
      return { decisions, gaps, replayed, inserted, removed, ...this.stats(meta) };
    });
  }

  /**
   * Per entry, each duplicate's event-time gap to the kept copy, read in one
   * statement after the inserts: a copy kept earlier in this call (within the
   * batch or the group) is stored by now, as one kept before is.
   */
  private duplicateGaps(entries: number, duplicates: Duplicate[]): number[][] {
    const gaps = Array.from({ length: entries }, (): number[] => []);
    if (duplicates.length === 0) return gaps;
    const kept = new Map(
      this.sql
        .exec<{ k: string; t: number | null }>("SELECT k, t FROM keys WHERE k IN (SELECT value FROM json_each(?))", JSON.stringify([...new Set(duplicates.map((d) => d.key))]))
        .toArray()
        .map((r) => [r.k, r.t]),
    );
    for (const d of duplicates) {
      const first = kept.get(d.key);
      if (first !== undefined && first !== null) gaps[d.entry].push(Math.abs(d.t - first));
    }
    return gaps;
  }

  /** Raises the partition watermark and evicts: prompt eviction without new rows. */
  advance(epoch: string, watermark: number): PartitionStats & { removed: number } {
    return this.atomically(() => {
      const meta = this.meta(epoch);
      const before = meta.watermark;
      const removed = this.evict(meta, watermark);
      if (removed > 0 || meta.watermark !== before) this.saveMeta(meta);
      this.maybePruneLedger();
      return { removed, ...this.stats(meta) };
    });
  }

  /** Read-only: a partition that never held state for this epoch reports zeros and stays unwritten. */
  describe(epoch: string): PartitionStats {
    const meta = this.currentMeta(epoch);
    return meta ? this.stats(meta) : { rows: 0, bytes: 0, watermark: 0, nextExpiry: null };
  }

  /** The remembered keys in key order, `limit` at a time after `after` (like Spark's state reader). */
  list(epoch: string, after: string, limit: number): StateEntry[] {
    if (!this.currentMeta(epoch)) return [];
    return this.sql
      .exec<{ k: string; t: number | null; expires: number | null }>("SELECT k, t, expires FROM keys WHERE k > ? ORDER BY k LIMIT ?", after, limit)
      .toArray()
      .map((r) => ({ key: r.k, eventTime: r.t, expiresAt: r.expires }));
  }

  async drop(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.cached = undefined;
    this.migrate(); // the instance may serve again (the stream created anew)
  }

  /** batch → (input index → decision), for the given batches' rows decided here before: one statement for all. */
  private recordedDecisions(batches: string[]): Map<string, Map<number, Decision>> {
    const out = new Map<string, Map<number, Decision>>();
    if (batches.length === 0) return out;
    const rows = this.sql
      .exec<{ batch: string; decisions: string }>("SELECT batch, decisions FROM ledger WHERE batch IN (SELECT value FROM json_each(?))", JSON.stringify(batches))
      .toArray();
    for (const r of rows) out.set(r.batch, decodeDecisions(r.decisions));
    return out;
  }

  /**
   * Lookup and insert in one statement: the candidates whose key is not
   * remembered are stored (the first copy of a key in order wins), and the
   * stored keys come back.
   */
  private insertNew(candidates: StateInsert[], meta: PartitionMeta): Set<string> {
    const stored = this.sql
      .exec<{ k: string; expires: number | null }>(
        `INSERT OR IGNORE INTO keys (k, t, expires)
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)
         RETURNING k, expires`,
        JSON.stringify(candidates.map((c) => [c.stateKey, c.eventTime, c.expiresAt])),
      )
      .toArray();
    for (const s of stored) {
      if (s.expires !== null && (meta.next_expiry === null || s.expires < meta.next_expiry)) meta.next_expiry = s.expires;
    }
    return new Set(stored.map((s) => s.k));
  }

  private currentMeta(epoch: string): PartitionMeta | null {
    if (this.cached === undefined) {
      this.cached = this.sql.exec<PartitionMeta>("SELECT epoch, watermark, rows, next_expiry FROM meta").toArray()[0] ?? null;
    }
    return this.cached && this.cached.epoch === epoch ? { ...this.cached } : null;
  }

  private meta(epoch: string): PartitionMeta {
    const current = this.currentMeta(epoch);
    if (current) return current;
    // First use, or state left by a deleted incarnation of the stream: start clean.
    this.sql.exec("DELETE FROM keys; DELETE FROM ledger;");
    const fresh = { epoch, watermark: 0, rows: 0, next_expiry: null };
    this.saveMeta(fresh);
    return { ...fresh };
  }

  private saveMeta(m: PartitionMeta): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO meta (id, epoch, watermark, rows, next_expiry) VALUES (1, ?, ?, ?, ?)",
      m.epoch, m.watermark, m.rows, m.next_expiry,
    );
    this.cached = { ...m };
  }

  /** One storage transaction; if it rolls back, so does the cached meta row (read again next time). */
  private atomically<T>(fn: () => T): T {
    try {
      return this.ctx.storage.transactionSync(fn);
    } catch (e) {
      this.cached = undefined;
      throw e;
    }
  }

  /**
   * Sets the partition watermark to max(itself, `watermark`) and forgets
   * expired keys: `expires <= wm`, the rule of isExpired() in
   * src/stream/dedup.ts, in SQL so that the expiry index does the work. Runs
   * only when the earliest expiry is due.
   */
  private evict(meta: PartitionMeta, watermark: number): number {
    meta.watermark = Math.max(meta.watermark, watermark);
    if (meta.next_expiry === null || meta.next_expiry > meta.watermark) return 0;
    const removed = this.sql.exec("DELETE FROM keys WHERE expires <= ? RETURNING 1", meta.watermark).toArray().length;
    meta.rows -= removed;
    meta.next_expiry = this.sql.exec<{ e: number | null }>("SELECT min(expires) AS e FROM keys").one().e;
    return removed;
  }

  private stats(meta: PartitionMeta): PartitionStats {
    return { rows: meta.rows, bytes: this.sql.databaseSize, watermark: meta.watermark, nextExpiry: meta.next_expiry };
  }

  private maybePruneLedger(): void {
    const now = Date.now();
    if (now - this.lastPrune < LEDGER_PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    this.sql.exec("DELETE FROM ledger WHERE at < ?", now - LEDGER_RETENTION_MS);
  }
}

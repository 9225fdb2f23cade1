import { DurableObject } from "cloudflare:workers";
import { applyBatch, stateKeyFor, type Decision, type DedupInput, type DedupSettings } from "./stream/dedup";
import type { Env } from "./env";
import { decodeDecisions, encodeDecisions } from "./stream/ledger";
import { failAt, faultsEnabled, type FaultPoint } from "./faults";
import { countedSql } from "./opcount";

export interface PartitionStats {
  rows: number;
  bytes: number;
  watermark: number;
}

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

export interface StateEntry {
  key: string;
  eventTime: number | null;
  expiresAt: number | null;
}

/** The partition's own row: which incarnation of the stream it holds, its watermark, its key count. */
type PartitionMeta = {
  epoch: string;
  watermark: number;
  rows: number;
};

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

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = countedSql(ctx.storage.sql, "Partition");
    this.migrate();
  }

  private migrate(): void {
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, watermark INTEGER NOT NULL, rows INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS keys (k TEXT PRIMARY KEY, t INTEGER, expires INTEGER) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS keys_by_expiry ON keys (expires) WHERE expires IS NOT NULL;
      CREATE TABLE IF NOT EXISTS ledger (batch TEXT PRIMARY KEY, at INTEGER NOT NULL, decisions TEXT NOT NULL) WITHOUT ROWID;
    `);
  }

  apply(req: ApplyRequest): ApplyResult {
    if (faultsEnabled() && req.fault === "partition-midway") {
      this.apply({ ...req, rows: req.rows.slice(0, Math.ceil(req.rows.length / 2)), fault: undefined });
      failAt(req.fault, "partition-midway");
    }
    return this.ctx.storage.transactionSync(() => {
      const meta = this.meta(req.epoch);
      const recorded = this.recordedDecisions(req.batch);
      // Rows this batch already had decided here (an attempt that crashed before
      // its commit) keep their decision; only rows new to this partition are judged.
      const fresh = req.rows.filter((r) => !recorded.has(r.index));
      let inserted = 0;
      let removed = 0;
      if (fresh.length > 0 || recorded.size === 0) {
        removed = this.evict(meta, Math.max(meta.watermark, req.watermark));
        const remembered = this.lookup(req.settings, fresh);
        const { decisions, inserts } = applyBatch(req.settings, meta.watermark, fresh, (k) => remembered.has(k));
        if (inserts.length > 0) {
          this.sql.exec(
            `INSERT INTO keys (k, t, expires)
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)`,
            JSON.stringify(inserts.map((i) => [i.stateKey, i.eventTime, i.expiresAt])),
          );
        }
        fresh.forEach((r, i) => recorded.set(r.index, decisions[i]));
        this.sql.exec(
          "INSERT OR REPLACE INTO ledger (batch, at, decisions) VALUES (?, ?, ?)",
          req.batch, Date.now(), encodeDecisions(recorded),
        );
        inserted = inserts.length;
        meta.rows += inserted;
        this.saveMeta(meta);
        this.maybePruneLedger();
      }
      const decisions = req.rows.map((r) => recorded.get(r.index)!).join("");
      return { decisions, replayed: fresh.length === 0 && req.rows.length > 0, inserted, removed, ...this.stats(meta) };
    });
  }

  /** Raises the partition watermark and evicts: prompt eviction without new rows. */
  advance(epoch: string, watermark: number): PartitionStats & { removed: number } {
    return this.ctx.storage.transactionSync(() => {
      const meta = this.meta(epoch);
      const removed = this.evict(meta, Math.max(meta.watermark, watermark));
      this.saveMeta(meta);
      this.maybePruneLedger();
      return { removed, ...this.stats(meta) };
    });
  }

  /** Read-only: a partition that never held state for this epoch reports zeros and stays unwritten. */
  describe(epoch: string): PartitionStats {
    const meta = this.currentMeta(epoch);
    return meta ? this.stats(meta) : { rows: 0, bytes: 0, watermark: 0 };
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
    this.migrate(); // the instance may serve again (the stream created anew)
  }

  /** input index → decision, for rows of this batch decided here before */
  private recordedDecisions(batch: string): Map<number, Decision> {
    const row = this.sql.exec<{ decisions: string }>("SELECT decisions FROM ledger WHERE batch = ?", batch).toArray()[0];
    return row ? decodeDecisions(row.decisions) : new Map();
  }

  private currentMeta(epoch: string): PartitionMeta | null {
    const row = this.sql.exec<PartitionMeta>("SELECT epoch, watermark, rows FROM meta").toArray()[0];
    return row && row.epoch === epoch ? row : null;
  }

  private meta(epoch: string): PartitionMeta {
    const current = this.currentMeta(epoch);
    if (current) return current;
    // First use, or state left by a deleted incarnation of the stream: start clean.
    this.sql.exec("DELETE FROM keys; DELETE FROM ledger;");
    const fresh = { epoch, watermark: 0, rows: 0 };
    this.saveMeta(fresh);
    return fresh;
  }

  private saveMeta(m: PartitionMeta): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (id, epoch, watermark, rows) VALUES (1, ?, ?, ?)", m.epoch, m.watermark, m.rows);
  }

  /**
   * Sets the partition watermark to `watermark` (never lower) and forgets expired
   * keys: `expires <= wm`, the rule of isExpired() in src/stream/dedup.ts, in SQL
   * so that the expiry index does the work.
   */
  private evict(meta: PartitionMeta, watermark: number): number {
    meta.watermark = Math.max(meta.watermark, watermark);
    const n = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM keys WHERE expires <= ?", meta.watermark).one().n;
    if (n > 0) {
      this.sql.exec("DELETE FROM keys WHERE expires <= ?", meta.watermark);
      meta.rows -= n;
    }
    return n;
  }

  private lookup(settings: DedupSettings, rows: readonly DedupInput[]): Set<string> {
    const probe = new Set(rows.map((r) => stateKeyFor(settings, r)));
    const found = this.sql
      .exec<{ k: string }>("SELECT k FROM keys WHERE k IN (SELECT value FROM json_each(?))", JSON.stringify([...probe]))
      .toArray();
    return new Set(found.map((r) => r.k));
  }

  private stats(meta: PartitionMeta): PartitionStats {
    return { rows: meta.rows, bytes: this.sql.databaseSize, watermark: meta.watermark };
  }

  private maybePruneLedger(): void {
    const now = Date.now();
    if (now - this.lastPrune < LEDGER_PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    this.sql.exec("DELETE FROM ledger WHERE at < ?", now - LEDGER_RETENTION_MS);
  }
}

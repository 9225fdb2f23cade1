import { decideByInsert, firstEventTimeOf, stateKeyFor, type Decision, type DedupSettings, type StateInsert } from "../stream/dedup";
import type { Env } from "../env";
import { decodeDecisions, encodeDecisions } from "../stream/ledger";
import { failAt, faultsEnabled, partitionFaultKey, takeFault } from "../instrument/faults";
import { addColumn, type Migration } from "../storage/migrations";
import { SqliteObject } from "../storage/sqlite-object";
import { bucketAtWatermark, bucketOf, bucketWidthFor } from "../stream/expiry-buckets";
import { keyHash64, keyHashLabel } from "../stream/key-hash";
import { eventTimeOf, forgetFrontReceipts, RECEIPTS_V6, forgetReceipts, lookupReceipt, nameKeptBatch, nextBatchNumber, recordReceipts, type KeyLayout } from "./receipts";
import {
  LEDGER_RETENTION_MS,
  type ApplyRequest,
  type ApplyResult,
  type GroupApplyRequest,
  type GroupApplyResult,
  type GroupEntry,
  type KeptBatch,
  type PartitionRow,
  type PartitionRpc,
  type PartitionStats,
  type StateEntry,
  type StateReceipt,
} from "./protocol";

// The protocol's names stay importable from here for code written before it had a module of its own.
export { LEDGER_RETENTION_MS };
export type {
  ApplyRequest, ApplyResult, GroupApplyRequest, GroupApplyResult, GroupEntry, KeptBatch, PartitionRow, PartitionStats, StateEntry, StateReceipt,
} from "./protocol";

/**
 * The partition's own row: which incarnation of the stream it holds, its
 * watermark, its key count, a lower bound of its earliest expiry, and its
 * layout, fixed by its first batch: expiry bucket width (null: none chosen
 * yet), whether keys are hashed, and which bucket `front` holds.
 */
type PartitionMeta = {
  epoch: string;
  watermark: number;
  rows: number;
  next_expiry: number | null;
  width: number | null;
  hashed: number;
  front_b: number | null;
  /** the decision ledger's small entries, in the meta row (which every apply writes anyway): JSON PendingEntries, or null */
  pending: string | null;
};

/** Counted in duplicates: a duplicate or a dropped conflict (a rejected one is in rejected). */
const countsAsDuplicate = (d: Decision) => d === "d" || d === "c";

/** Ledger entries held in the meta row: entry id → [recorded at, [[batch key, decisions], …]]. */
type PendingEntries = Record<string, [number, [string, string][]]>;

/** An entry this small rides in the meta row, while those there stay under PENDING_MAX_BYTES; others go to the ledger table. */
export const PENDING_ENTRY_MAX_BYTES = 4_096;
export const PENDING_MAX_BYTES = 32_768;

/** A row judged a duplicate: which entry, its state key and event time. */
type Duplicate = { entry: number; key: string; t: number; settings: DedupSettings };

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
  {
    version: 3,
    does: "compact state: keys clustered by expiry bucket (b, k) with no per-key expiry index; front: the bucket the watermark is in, by expiry; meta.width, meta.hashed, meta.front_b",
    up: (sql) => {
      sql.exec(`
        CREATE TABLE keys_v3 (b INTEGER NOT NULL, k NOT NULL, t INTEGER, e INTEGER, PRIMARY KEY (b, k)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS front (e INTEGER NOT NULL, k NOT NULL, PRIMARY KEY (e, k)) WITHOUT ROWID;
        ALTER TABLE meta ADD COLUMN width INTEGER;
        ALTER TABLE meta ADD COLUMN hashed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE meta ADD COLUMN front_b INTEGER;
      `);
      // The stream's delay isn't known here: a width from the spread of the expiries held.
      const held = sql.exec<{ n: number; lo: number | null; hi: number | null }>("SELECT count(*) AS n, min(expires) AS lo, max(expires) AS hi FROM keys").one();
      const width = held.n === 0 ? null : held.lo === null ? 0 : Math.max(60_000, Math.floor((held.hi! - held.lo) / 8));
      sql.exec("UPDATE meta SET width = ?", width);
      sql.exec("INSERT INTO keys_v3 (b, k, t, e) SELECT CASE WHEN expires IS NULL OR ?1 = 0 THEN 0 ELSE expires / CAST(?1 AS INTEGER) END, k, t, expires FROM keys", width ?? 0);
      sql.exec("DROP INDEX IF EXISTS keys_by_expiry; DROP TABLE keys; ALTER TABLE keys_v3 RENAME TO keys;");
    },
  },
  {
    version: 4,
    does: "the decision ledger per micro-batch: ledger.batch names an entry (a micro-batch, or one batch), ledger.decisions is a JSON array of [batch key, decisions]; meta.pending holds small entries",
    up: (sql) => {
      sql.exec("UPDATE ledger SET decisions = json_array(json_array(batch, decisions))");
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "pending")) sql.exec("ALTER TABLE meta ADD COLUMN pending TEXT");
    },
  },
  {
    version: 5,
    does: "what counts as the same event: keys.d (the kept copy's 64-bit content digest), kept_batches (the batches' names by number), receipts (copies dropped against a key; its batch's number where t can't hold it)",
    up: (sql) => {
      addColumn(sql, "keys", "d", "INTEGER");
      sql.exec(`
        CREATE TABLE IF NOT EXISTS kept_batches (n INTEGER PRIMARY KEY, batch TEXT NOT NULL, until INTEGER, lo INTEGER, hi INTEGER);
        CREATE TABLE IF NOT EXISTS receipts (b INTEGER NOT NULL, k NOT NULL, n INTEGER, dropped INTEGER NOT NULL, conflicts INTEGER NOT NULL, PRIMARY KEY (b, k)) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 6,
    does: "a hashed key with an expiry counts its dropped copies in keys.t (n + dropped·2^32, src/partition/receipts.ts): their receipts rows go, but for conflicts",
    up: (sql) => sql.exec(RECEIPTS_V6),
  },
];

const LEDGER_PRUNE_EVERY_MS = 3_600_000;

/**
 * One state partition: the remembered keys with their expiry, the partition
 * watermark (never goes back) and the per-batch decision ledger. Every method
 * runs synchronously against SQLite, so each call is atomic and calls never
 * interleave.
 */
export class Partition extends SqliteObject<Env> implements PartitionRpc {
  private lastPrune = 0;
  /** the meta row as stored: only this object writes it, so it is read once */
  private cached: PartitionMeta | null | undefined;
  /** the expiry buckets that hold keys (a few): a key is looked up in each; read once, then kept */
  private buckets: Set<number> | undefined;
  /** the next kept_batches number (read once, then kept) */
  private nextBatch: number | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: PARTITION_MIGRATIONS, countAs: "Partition" });
  }

  /** One batch: applyGroup with a single entry whose earlier decisions, if any, are replayed. */
  apply(req: ApplyRequest): ApplyResult {
    const { decisions, ...r } = this.applyGroup({
      epoch: req.epoch,
      watermark: req.watermark,
      entries: [{ batch: req.batch, settings: req.settings, rows: req.rows, resumed: true }],
    });
    return { ...r, decisions: decisions[0] };
  }

  applyGroup(req: GroupApplyRequest): GroupApplyResult & { replayed: boolean } {
    const fault = faultsEnabled() && req.entries.length > 0 ? takeFault(partitionFaultKey(req.epoch, req.entries[0].batch)) : null;
    if (fault === "partition-midway") {
      const [first, ...rest] = req.entries;
      this.applyGroup({ ...req, entries: [{ ...first, rows: first.rows.slice(0, Math.ceil(first.rows.length / 2)) }, ...rest].slice(0, 1) });
      failAt(fault, "partition-midway");
    }
    return this.atomically(() => {
      const meta = this.meta(req.epoch);
      const pending: PendingEntries = meta.pending ? JSON.parse(meta.pending) : {};
      let pendingChanged = false;
      if (req.forget && req.forget.length > 0) {
        const elsewhere = req.forget.filter((id) => !(Object.hasOwn(pending, id) && delete pending[id]));
        pendingChanged = elsewhere.length < req.forget.length;
        if (elsewhere.length > 0 && this.ledgerRows() > 0) {
          this.sql.exec("DELETE FROM ledger WHERE batch IN (SELECT value FROM json_each(?))", JSON.stringify(elsewhere));
          this.ledgerCount = undefined;
        }
      }
      const recorded = this.recordedDecisions(req.entries.filter((e) => e.resumed).map((e) => e.batch), pending);
      const removed = this.evict(meta, req.watermark);
      let inserted = 0;
      let judged = 0;
      const ledger: [string, string][] = [];
      const perEntry = req.group === undefined;
      const duplicates: Duplicate[] = [];
      const kept: KeptBatch[][] = [];
      const decisions = req.entries.map((entry, e) => {
        // Rows this batch already had decided here (an attempt that crashed before
        // its commit) keep their decision; only rows new to this partition are judged.
        const known = recorded.get(entry.batch) ?? new Map<number, Decision>();
        const fresh = entry.rows.filter((r) => !known.has(r.index));
        let freshDrops: PartitionRow[] = [];
        if (fresh.length > 0 || known.size === 0) {
          const n = this.batchNumber();
          const r = decideByInsert(
            entry.settings, meta.watermark, fresh,
            (candidates) => this.insertNew(candidates, meta, entry.settings, { n, batch: entry.batch }),
            (keys) => this.keptDigests(meta, keys),
          );
          fresh.forEach((row, i) => known.set(row.index, r.decisions[i]));
          freshDrops = fresh.filter((_, i) => r.decisions[i] !== "e" && r.decisions[i] !== "l");
          inserted += r.inserted;
          judged += fresh.length;
          ledger.push([entry.batch, encodeDecisions(known)]);
        }
        // Recorded duplicates too: their batch never committed, so the Coordinator has not counted them.
        for (const r of entry.rows) if (countsAsDuplicate(known.get(r.index)!) && r.eventTime !== null) duplicates.push({ entry: e, key: stateKeyFor(entry.settings, r), t: r.eventTime, settings: entry.settings });
        kept.push(recordReceipts(this.sql, this.layout(meta), entry, known, freshDrops));
        return entry.rows.map((r) => known.get(r.index)!).join("");
      });
      const gaps = this.duplicateGaps(req.entries.length, duplicates, meta);
      const now = Date.now();
      const small = ledger.length > 0 && !perEntry && this.fitsPending(pending, ledger);
      if (small) {
        // One entry for the micro-batch, in the meta row written below anyway: no row of its own to write, nor to delete.
        pending[req.group!] = [now, ledger];
        pendingChanged = true;
      } else if (ledger.length > 0 && perEntry) {
        this.sql.exec(
          `INSERT OR REPLACE INTO ledger (batch, at, decisions)
           SELECT json_extract(value, '$[0]'), ?, json_array(json(value)) FROM json_each(?)`,
          Date.now(), JSON.stringify(ledger),
        );
      } else if (ledger.length > 0) {
        // One entry for the micro-batch: one row written, and one deleted once it commits.
        this.sql.exec("INSERT OR REPLACE INTO ledger (batch, at, decisions) VALUES (?, ?, ?)", req.group!, now, JSON.stringify(ledger));
      }
      if (ledger.length > 0 && !small) this.ledgerCount = undefined;
      if (this.prunePending(pending, now)) pendingChanged = true;
      if (pendingChanged) meta.pending = Object.keys(pending).length > 0 ? JSON.stringify(pending) : null;
      meta.rows += inserted;
      if (inserted > 0 || removed > 0 || ledger.length > 0 || pendingChanged) this.saveMeta(meta);
      this.maybePruneLedger();
      const replayed = judged === 0 && req.entries.some((e) => e.rows.length > 0);
      return { decisions, gaps, ...(kept.some((k) => k.length > 0) ? { kept } : {}), replayed, inserted, removed, ...this.stats(meta) };
    });
  }

  /** The next number for kept_batches (src/partition/receipts.ts). */
  private batchNumber(): number {
    this.nextBatch ??= nextBatchNumber(this.sql);
    return this.nextBatch;
  }

  /** The kept copies' digests of remembered keys (null: kept without one), for the conflict check. */
  private keptDigests(meta: PartitionMeta, stateKeys: string[]): Map<string, string | null> {
    const byStored = new Map(stateKeys.map((k) => [this.storedKey(meta, k), k]));
    const rows = this.sql
      .exec<{ id: string; d: string | null }>(
        `SELECT ${meta.hashed ? "CAST(k AS TEXT)" : "k"} AS id, CAST(d AS TEXT) AS d FROM keys WHERE b IN (SELECT value FROM json_each(?1)) AND k IN (SELECT value FROM json_each(?2))`,
        JSON.stringify([...this.liveBuckets()]), `[${[...byStored.keys()].map((k) => this.keyLiteral(meta, k)).join(",")}]`,
      )
      .toArray();
    return new Map(rows.map((r) => [byStored.get(String(r.id))!, r.d]));
  }

  /** How this partition stores its keys, for the receipt statements (src/partition/receipts.ts). */
  private layout(meta: PartitionMeta): KeyLayout {
    return {
      hashed: meta.hashed,
      buckets: () => JSON.stringify([...this.liveBuckets()]),
      stored: (k) => this.storedKey(meta, k),
      literal: (stored) => this.keyLiteral(meta, stored),
    };
  }

  /**
   * Per entry, each duplicate's event-time gap to the kept copy, read in one
   * statement after the inserts: a copy kept earlier in this call (within the
   * batch or the group) is stored by now, as one kept before is. Hashed state
   * keeps no event time where the expiry implies it (src/stream/dedup.ts).
   */
  private duplicateGaps(entries: number, duplicates: Duplicate[], meta: PartitionMeta): number[][] {
    const gaps = Array.from({ length: entries }, (): number[] => []);
    if (duplicates.length === 0) return gaps;
    const stored = [...new Set(duplicates.map((d) => this.storedKey(meta, d.key)))];
    const kept = new Map(
      this.sql
        .exec<{ id: string; t: number | null; e: number | null }>(
          `SELECT ${meta.hashed ? "CAST(k AS TEXT)" : "k"} AS id, ${eventTimeOf(meta.hashed)} AS t, e FROM keys WHERE b IN (SELECT value FROM json_each(?1)) AND k IN (SELECT value FROM json_each(?2))`,
          JSON.stringify([...this.liveBuckets()]), `[${stored.map((k) => this.keyLiteral(meta, k)).join(",")}]`,
        )
        .toArray()
        .map((r) => [String(r.id), r]),
    );
    for (const d of duplicates) {
      const r = kept.get(this.storedKey(meta, d.key));
      const first = r ? (r.t ?? firstEventTimeOf(d.settings, r.e)) : null;
      if (first !== null) gaps[d.entry].push(Math.abs(d.t - first));
    }
    return gaps;
  }

  /** What the keys table holds for a state key: its text, or its 64-bit hash in decimal. */
  private storedKey(meta: PartitionMeta, stateKey: string): string {
    return meta.hashed ? keyHash64(stateKey) : stateKey;
  }

  /** A stored key in a JSON array: a hash as an integer literal, which json_extract reads as an exact 64-bit INTEGER (a JS number can't hold it). */
  private keyLiteral(meta: PartitionMeta, stored: string): string {
    return meta.hashed ? stored : JSON.stringify(stored);
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
    const meta = this.currentMeta(epoch);
    if (!meta) return [];
    // Hashed keys are listed as their label (`#` + 16 hex digits), in label order.
    const key = meta.hashed ? "printf('#%016x', k)" : "k";
    return this.sql
      .exec<{ key: string; t: number | null; e: number | null }>(`SELECT ${key} AS key, ${eventTimeOf(meta.hashed)} AS t, e FROM keys WHERE ${key} > ? ORDER BY 1 LIMIT ?`, after, limit)
      .toArray()
      .map((r) => ({ key: r.key, eventTime: r.t, expiresAt: r.e }));
  }

  /** The one remembered key `stateKey`, if it is (a list of at most one entry, as list() answers), with its receipt. */
  lookup(epoch: string, stateKey: string): StateReceipt[] {
    const meta = this.currentMeta(epoch);
    if (!meta || meta.width === null) return [];
    return lookupReceipt(this.sql, this.layout(meta), stateKey);
  }

  async drop(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.cached = undefined;
    this.buckets = undefined;
    this.nextBatch = undefined;
    this.ledgerCount = undefined;
    this.migrate(); // the instance may serve again (the stream created anew)
  }

  /** Whether an entry joins the meta row: small, and the meta row stays small. */
  private fitsPending(pending: PendingEntries, entry: [string, string][]): boolean {
    const size = JSON.stringify(entry).length;
    return size <= PENDING_ENTRY_MAX_BYTES && size + (JSON.stringify(pending).length) <= PENDING_MAX_BYTES;
  }

  /** Drops entries of the meta row older than LEDGER_RETENTION_MS (micro-batches that never committed); true if any went. */
  private prunePending(pending: PendingEntries, now: number): boolean {
    let changed = false;
    for (const [id, [at]] of Object.entries(pending)) if (at < now - LEDGER_RETENTION_MS) changed = delete pending[id];
    return changed;
  }

  /** Rows of the ledger table (read once, then kept): a partition whose entries all fit the meta row never touches it. */
  private ledgerRows(): number {
    this.ledgerCount ??= this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM ledger").one().n;
    return this.ledgerCount;
  }

  private ledgerCount: number | undefined;

  /**
   * batch → (input index → decision), for the given batches' rows decided
   * here before, from whichever entries hold them (an attempt that failed,
   * and a later one that failed too: decisions never change, so their union):
   * the meta row's, then the ledger table's (one statement; it holds only
   * entries not yet committed, so the scan is short).
   */
  private recordedDecisions(batches: string[], pending: PendingEntries): Map<string, Map<number, Decision>> {
    const out = new Map<string, Map<number, Decision>>();
    if (batches.length === 0) return out;
    const add = (batch: string, decisions: string) => {
      const known = out.get(batch) ?? new Map<number, Decision>();
      for (const [i, d] of decodeDecisions(decisions)) known.set(i, d);
      out.set(batch, known);
    };
    const wanted = new Set(batches);
    for (const [, entries] of Object.values(pending)) for (const [batch, decisions] of entries) if (wanted.has(batch)) add(batch, decisions);
    if (this.ledgerRows() === 0) return out;
    const rows = this.sql
      .exec<{ batch: string; decisions: string }>(
        `SELECT json_extract(m.value, '$[0]') AS batch, json_extract(m.value, '$[1]') AS decisions FROM ledger l, json_each(l.decisions) m
         WHERE json_extract(m.value, '$[0]') IN (SELECT value FROM json_each(?))`,
        JSON.stringify(batches),
      )
      .toArray();
    for (const r of rows) add(r.batch, r.decisions);
    return out;
  }

  /**
   * Lookup and insert in one statement: the candidates whose key is in none
   * of the live buckets are stored (the first copy of a key in order wins),
   * and the stored keys come back. Eviction ran first, so no key held has
   * expired.
   */
  private insertNew(candidates: StateInsert[], meta: PartitionMeta, settings: DedupSettings, batch: { n: number; batch: string }): Set<string> {
    if (meta.width === null) {
      meta.width = bucketWidthFor(settings);
      meta.hashed = settings.hashedKeys ? 1 : 0;
    }
    const width = meta.width;
    // Stored key → the candidate's state key (a hashed key comes back as decimal text).
    // Hashed state keeps the event time only where the expiry doesn't imply it.
    const byStored = new Map<string, string>();
    const rows: string[] = [];
    for (const c of candidates) {
      const stored = this.storedKey(meta, c.stateKey);
      if (byStored.has(stored)) continue;
      byStored.set(stored, c.stateKey);
      // The digest as an integer literal (json_extract reads it as an exact 64-bit INTEGER); the batch by its number.
      // A hashed key with an expiry keeps its batch's number in t, not its event time (the expiry implies it).
      const inT = meta.hashed && c.expiresAt !== null;
      rows.push(`[${bucketOf(c.expiresAt, width)},${this.keyLiteral(meta, stored)},${inT ? batch.n : c.eventTime},${c.expiresAt},${c.digest ?? null}]`);
    }
    const k = "json_extract(c.value, '$[1]')";
    const inserted = this.sql
      .exec<{ id: string; b: number; e: number | null }>(
        `INSERT INTO keys (b, k, t, e, d)
         SELECT json_extract(c.value, '$[0]'), ${k}, json_extract(c.value, '$[2]'), json_extract(c.value, '$[3]'), json_extract(c.value, '$[4]') FROM json_each(?1) c
         WHERE NOT EXISTS (SELECT 1 FROM keys x WHERE x.b IN (SELECT value FROM json_each(?2)) AND x.k = ${k})
         RETURNING ${meta.hashed ? "CAST(k AS TEXT)" : "k"} AS id, b, e`,
        `[${rows.join(",")}]`, JSON.stringify([...this.liveBuckets()]),
      )
      .toArray();
    if (inserted.length > 0) {
      nameKeptBatch(this.sql, this.layout(meta), batch, inserted);
      this.nextBatch = batch.n + 1;
    }
    const intoFront: string[] = [];
    for (const r of inserted) {
      this.buckets!.add(r.b);
      if (r.e !== null && (meta.next_expiry === null || r.e < meta.next_expiry)) meta.next_expiry = r.e;
      if (r.b === meta.front_b) intoFront.push(`[${r.e},${this.keyLiteral(meta, String(r.id))}]`);
    }
    if (intoFront.length > 0) {
      this.sql.exec("INSERT INTO front (e, k) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)", `[${intoFront.join(",")}]`);
    }
    return new Set(inserted.map((r) => byStored.get(String(r.id))!));
  }

  /** The buckets that hold keys, read with a skip scan of the primary key the first time. */
  private liveBuckets(): Set<number> {
    this.buckets ??= new Set(
      this.sql
        .exec<{ b: number }>(
          `WITH RECURSIVE bs(b) AS (SELECT min(b) FROM keys UNION ALL SELECT (SELECT min(b) FROM keys WHERE b > bs.b) FROM bs WHERE bs.b IS NOT NULL)
           SELECT b FROM bs WHERE b IS NOT NULL`,
        )
        .toArray()
        .map((r) => r.b),
    );
    return this.buckets;
  }

  private currentMeta(epoch: string): PartitionMeta | null {
    if (this.cached === undefined) {
      this.cached = this.sql.exec<PartitionMeta>("SELECT epoch, watermark, rows, next_expiry, width, hashed, front_b, pending FROM meta").toArray()[0] ?? null;
    }
    return this.cached && this.cached.epoch === epoch ? { ...this.cached } : null;
  }

  private meta(epoch: string): PartitionMeta {
    const current = this.currentMeta(epoch);
    if (current) return current;
    // First use, or state left by a deleted incarnation of the stream: start clean.
    this.sql.exec("DELETE FROM keys; DELETE FROM front; DELETE FROM ledger; DELETE FROM kept_batches; DELETE FROM receipts;");
    this.buckets = new Set();
    this.ledgerCount = 0;
    const fresh = { epoch, watermark: 0, rows: 0, next_expiry: null, width: null, hashed: 0, front_b: null, pending: null };
    this.saveMeta(fresh);
    return { ...fresh };
  }

  private saveMeta(m: PartitionMeta): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, front_b, pending) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)",
      m.epoch, m.watermark, m.rows, m.next_expiry, m.width, m.hashed, m.front_b, m.pending,
    );
    this.cached = { ...m };
  }

  /** One storage transaction; if it rolls back, so does the cached meta row (read again next time). */
  private atomically<T>(fn: () => T): T {
    try {
      return this.ctx.storage.transactionSync(fn);
    } catch (e) {
      this.cached = undefined;
      this.buckets = undefined;
      this.nextBatch = undefined;
      this.ledgerCount = undefined;
      throw e;
    }
  }

  /**
   * Sets the partition watermark to max(itself, `watermark`) and forgets
   * exactly the expired keys (`e <= wm`, the rule of isExpired() in
   * src/stream/dedup.ts). Buckets below the watermark's go whole, by range.
   * The watermark's own bucket is copied once into `front`, ordered by expiry,
   * so that each later step deletes just the keys it passes: the work is
   * proportional to the keys expired, with no per-key index. Runs only when
   * the earliest expiry (a lower bound) is due.
   */
  private evict(meta: PartitionMeta, watermark: number): number {
    meta.watermark = Math.max(meta.watermark, watermark);
    if (meta.next_expiry === null || meta.next_expiry > meta.watermark || !meta.width) return 0;
    const wm = meta.watermark;
    const at = bucketAtWatermark(wm, meta.width);
    let removed = this.sql.exec("DELETE FROM keys WHERE b < ? RETURNING 1", at).toArray().length;
    forgetReceipts(this.sql, at, wm);
    const buckets = this.liveBuckets();
    for (const b of buckets) if (b < at) buckets.delete(b);
    if (meta.front_b !== null && meta.front_b !== at) {
      this.sql.exec("DELETE FROM front");
      meta.front_b = null;
    }
    if (buckets.has(at) && at * meta.width <= wm) {
      if (meta.front_b === null) {
        // In front's own order: appending sorted rows is ~8× faster than inserting them at random (0.7 s per million keys).
        this.sql.exec("INSERT INTO front (e, k) SELECT e, k FROM keys WHERE b = ? ORDER BY e, k", at);
        meta.front_b = at;
      }
      removed += this.sql.exec("DELETE FROM keys WHERE b = ? AND k IN (SELECT k FROM front WHERE e <= ?) RETURNING 1", at, wm).toArray().length;
      forgetFrontReceipts(this.sql, at, wm);
      this.sql.exec("DELETE FROM front WHERE e <= ?", wm);
    }
    meta.rows -= removed;
    meta.next_expiry = this.earliestExpiry(meta);
    return removed;
  }

  /** Exact while `front` holds keys; otherwise the start of the lowest bucket, a lower bound that costs no scan. */
  private earliestExpiry(meta: PartitionMeta): number | null {
    if (meta.front_b !== null) {
      const e = this.sql.exec<{ e: number | null }>("SELECT min(e) AS e FROM front").one().e;
      if (e !== null) return e;
    }
    const b = this.sql.exec<{ b: number | null }>("SELECT min(b) AS b FROM keys").one().b;
    return b === null ? null : b * meta.width!;
  }

  private stats(meta: PartitionMeta): PartitionStats {
    return { rows: meta.rows, bytes: this.sql.databaseSize, watermark: meta.watermark, nextExpiry: meta.next_expiry };
  }

  private maybePruneLedger(): void {
    const now = Date.now();
    if (now - this.lastPrune < LEDGER_PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    if (this.ledgerRows() === 0) return;
    this.sql.exec("DELETE FROM ledger WHERE at < ?", now - LEDGER_RETENTION_MS);
    this.ledgerCount = undefined;
  }
}

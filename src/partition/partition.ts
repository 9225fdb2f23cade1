import { applyBatch, expiryOf as expiryAt, firstEventTimeOf, stateKeyFor, type Decision, type DedupSettings } from "../stream/dedup";
import type { Env } from "../env";
import { decodeDecisions, encodeDecisions } from "../stream/ledger";
import { failAt, faultsEnabled, partitionFaultKey, takeFault } from "../instrument/faults";
import { addColumn, schemaVersion } from "../storage/migrations";
import { SqliteObject, tableExists } from "../storage/sqlite-object";
import { bucketAtWatermark, bucketOf, bucketWidthFor } from "../stream/expiry-buckets";
import { BucketFilters } from "../stream/bucket-filters";
import {
  absoluteBucket,
  expiryOf,
  expirySql,
  hasReceiptColumn,
  isCompact,
  KEY_HASH_KEYED,
  KEY_HASH_UNKEYED,
  KEY_TEXT,
  keyLiteral,
  numberOf,
  placeOf,
  readHeld,
  storedBucket,
  storedKey,
  writeHeld,
  type Held,
  type Layout,
} from "./layout";
import { newHashSecret } from "../stream/keyed-key-hash";
import { forgetFrontReceipts, forgetReceipts, listKeys, lookupReceipt, nameBatch, openChunk, resolveNames, sealChunk, type NameChunk } from "./receipts";
import {
  LEDGER_RETENTION_MS,
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

import { rowColumns, rowsOf } from "../stream/row-columns";
import { PARTITION_LAYOUT, PARTITION_MIGRATIONS } from "./migrations";

// The migrations stay importable from here (tests name them so).
export { PARTITION_LAYOUT, PARTITION_MIGRATIONS };
// The protocol's names stay importable from here for code written before it had a module of its own.
export { LEDGER_RETENTION_MS };
export type {
  GroupApplyRequest,
  GroupApplyResult,
  GroupEntry,
  KeptBatch,
  PartitionRow,
  PartitionStats,
  StateEntry,
  StateReceipt,
} from "./protocol";

/**
 * The partition's own row: which incarnation of the stream it holds, its
 * watermark, its key count, a lower bound of its earliest expiry, and its
 * layout, fixed by its first batch: expiry bucket width (null: none chosen
 * yet), whether keys are hashed, which bucket `front` holds, and the base of
 * its relative buckets (null: absolute, src/partition/layout.ts).
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
  /** the open chunk of kept batches' names (JSON NameChunk, src/partition/receipts.ts), or null */
  names: string | null;
  base: number | null;
  /** the keyed key hash's secret (src/stream/keyed-key-hash.ts), drawn with the layout; null: keys as text or hashed unkeyed */
  hash_key: string | null;
};

/** An entry of the call with its rows out of their wire columns. */
type Entry = Omit<GroupEntry, "rows"> & { rows: PartitionRow[] };

/** A row dropped by the watermark before the dedup check (DESIGN §2.4). */
const isLate = (settings: DedupSettings, watermark: number, r: PartitionRow) => settings.hasEventTime && r.eventTime !== null && r.eventTime <= watermark;

/** Counted in duplicates: a duplicate or a dropped conflict (a rejected one is in rejected). */
const countsAsDuplicate = (d: Decision) => d === "d" || d === "c";

/** Ledger entries held in the meta row: entry id → [recorded at, [[batch key, decisions], …]]. */
type PendingEntries = Record<string, [number, [string, string][]]>;

/** An entry this small rides in the meta row, while those there stay under PENDING_MAX_BYTES; others go to the ledger table. */
export const PENDING_ENTRY_MAX_BYTES = 4_096;
export const PENDING_MAX_BYTES = 32_768;

const LEDGER_PRUNE_EVERY_MS = 3_600_000;

/** A call's reported storage size is read again once the partition's key count has moved by this many since the last reading. */
export const SIZE_EVERY_ROWS = 64;

/** Past this many keys a partition probes every live bucket instead of keeping filters (1.5–3 MB per million keys, and a scan of them on wake). */
export const FILTERED_KEYS_MAX = 2_000_000;

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
  /** the expiry buckets that hold keys (a few, stored form): a key is looked up in each; read once, then kept */
  private buckets: Set<number> | undefined;
  /** whether keys has its r column (src/partition/layout.ts; read once, then kept) */
  private withR: boolean | undefined;
  /** which buckets may hold a key (in memory; made again after a rollback or a restart) */
  private filters: BucketFilters | undefined;
  /** the storage size as last read, and the key count then (stats()) */
  private sized: { rows: number; bytes: number } | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: PARTITION_MIGRATIONS, countAs: "Partition" });
  }

  /** A new partition gets the current layout at once; storage written before is migrated step by step. */
  protected override migrate(): void {
    if (schemaVersion(this.sql) === 0 && !tableExists(this.sql, "meta") && !tableExists(this.sql, "keys")) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec(PARTITION_LAYOUT);
        this.sql.exec("INSERT OR REPLACE INTO _schema (id, version) VALUES (1, ?)", Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)));
      });
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
  applyGroup(req: GroupApplyRequest): GroupApplyResult & { replayed: boolean } {
    const fault = faultsEnabled() && req.entries.length > 0 ? takeFault(partitionFaultKey(req.epoch, req.entries[0].batch)) : null;
    if (fault === "partition-midway") {
      const first = req.entries[0];
      const half = rowsOf(first.rows).slice(0, Math.ceil(first.rows.index.length / 2));
      this.applyGroup({ ...req, entries: [{ ...first, rows: rowColumns(half) }] });
      failAt(fault, "partition-midway");
    }
    const entries: Entry[] = req.entries.map((e) => ({ batch: e.batch, settings: e.settings, rows: rowsOf(e.rows), resumed: e.resumed }));
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
      const recorded = this.recordedDecisions(
        entries.filter((e) => e.resumed).map((e) => e.batch),
        pending,
      );
      const removed = this.evict(meta, req.watermark);
      // Rows this batch already had decided here (an attempt that crashed before
      // its commit) keep their decision; only rows new to this partition are judged.
      const work = entries.map((entry) => {
        const known = recorded.get(entry.batch) ?? new Map<number, Decision>();
        const fresh = entry.rows.filter((r) => !known.has(r.index));
        return { entry, known, fresh, judged: fresh.length > 0 || known.size === 0 };
      });
      const layout = this.fixLayout(meta, work);
      // Each state key's stored form: itself, or its hash worked out once per call.
      const ids = new Map<string, string>();
      const id = !layout?.hashed
        ? (stateKey: string) => stateKey
        : (stateKey: string) => {
            let stored = ids.get(stateKey);
            if (stored === undefined) ids.set(stateKey, (stored = storedKey(layout, stateKey)));
            return stored;
          };
      const held = layout ? this.readHeldFor(meta, layout, id, work) : new Map<string, Held>();
      const chunk: { open: NameChunk | null } = { open: null };
      let inserted = 0;
      let judged = 0;
      const ledger: [string, string][] = [];
      const perEntry = req.group === undefined;
      const decisions = work.map(({ entry, known, fresh, judged: judging }) => {
        if (judging) {
          // No layout yet means no row of this call can be stored: every fresh one is late (fixLayout()).
          if (!layout) for (const r of fresh) known.set(r.index, "l");
          else if (fresh.length > 0) inserted += this.judge(meta, layout, id, held, chunk, entry, fresh, known);
          judged += fresh.length;
          ledger.push([entry.batch, encodeDecisions(known)]);
        }
        return entry.rows.map((r) => known.get(r.index)!).join("");
      });
      if (layout) this.store(meta, layout, held);
      const { gaps, kept } = layout ? this.answers(meta, layout, id, held, chunk, work) : { gaps: work.map((): number[] => []), kept: [] };
      if (chunk.open) meta.names = JSON.stringify(sealChunk(this.sql, chunk.open));
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
          Date.now(),
          JSON.stringify(ledger),
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
      const replayed = judged === 0 && entries.some((e) => e.rows.length > 0);
      return { decisions, gaps, ...(kept.some((k) => k.length > 0) ? { kept } : {}), replayed, inserted, removed, ...this.stats(meta) };
    });
  }

  /** The partition's layout, fixed by the first row it may store (null: none yet, and none in this call). */
  private fixLayout(meta: PartitionMeta, work: readonly { entry: Entry; fresh: PartitionRow[] }[]): Layout | null {
    if (meta.width === null) {
      for (const { entry, fresh } of work) {
        const first = fresh.find((r) => !isLate(entry.settings, meta.watermark, r));
        if (!first) continue;
        meta.width = bucketWidthFor(entry.settings);
        // Hashed keys are keyed from release 27 on: a partition that fixed its layout before keeps the unkeyed hash it stored with.
        meta.hashed = entry.settings.hashedKeys ? KEY_HASH_KEYED : KEY_TEXT;
        meta.hash_key = entry.settings.hashedKeys ? newHashSecret() : null;
        const e = expiryAt(entry.settings, first.eventTime);
        // Version 7 on: buckets counted from the first one, expiries from their bucket's start (a few bytes per key).
        meta.base = meta.width > 0 && e !== null ? bucketOf(e, meta.width) : null;
        break;
      }
      if (meta.width === null) return null;
    }
    return { hashed: meta.hashed, hashKey: meta.hash_key, width: meta.width, base: meta.base };
  }

  /** The key rows held that this call's rows may meet: its candidates', and those of its recorded drops (for gaps and receipts). */
  private readHeldFor(
    meta: PartitionMeta,
    l: Layout,
    id: (stateKey: string) => string,
    work: readonly { entry: Entry; known: Map<number, Decision>; fresh: PartitionRow[]; judged: boolean }[],
  ): Map<string, Held> {
    const wanted = new Set<string>();
    for (const { entry, known, fresh, judged } of work) {
      if (judged) for (const r of fresh) if (!isLate(entry.settings, meta.watermark, r)) wanted.add(id(stateKeyFor(entry.settings, r)));
      for (const r of entry.rows) {
        const d = known.get(r.index);
        if (d === "d" || d === "c" || d === "x") wanted.add(id(stateKeyFor(entry.settings, r)));
      }
    }
    const live = this.liveBuckets();
    if (meta.rows > FILTERED_KEYS_MAX) {
      this.filters = undefined; // and no longer kept up to date: made again from scans if the partition shrinks
      return readHeld(this.sql, l, this.hasR(), live, wanted);
    }
    // Only the keys some bucket may hold, in those buckets: a call whose keys are all new reads nothing.
    const maybe = this.keyFilters(l).maybeHeld(wanted, live);
    return readHeld(this.sql, l, this.hasR(), maybe.buckets, maybe.keys);
  }

  /** The buckets' key filters (src/stream/bucket-filters.ts), each made from a scan of its bucket when first asked. */
  private keyFilters(l: Layout): BucketFilters {
    this.filters ??= new BucketFilters((b) =>
      this.sql
        .exec<{ k: string }>(`SELECT ${l.hashed ? "CAST(k AS TEXT)" : "k"} AS k FROM keys WHERE b = ?`, b)
        .toArray()
        .map((r) => String(r.k)),
    );
    return this.filters;
  }

  /**
   * Judges an entry's fresh rows against the rows held (and those this call
   * added before it), in memory: the first copy of a key not held is kept and
   * added, every other copy is dropped, a conflict where both digests differ.
   * Returns the keys added. Fills `known` with the decisions.
   */
  private judge(
    meta: PartitionMeta,
    l: Layout,
    id: (stateKey: string) => string,
    held: Map<string, Held>,
    chunk: { open: NameChunk | null },
    entry: Entry,
    fresh: PartitionRow[],
    known: Map<number, Decision>,
  ): number {
    const r = applyBatch(
      entry.settings,
      meta.watermark,
      fresh,
      (k) => held.has(id(k)),
      (k) => held.get(id(k))?.d ?? null,
      id,
    );
    fresh.forEach((row, i) => known.set(row.index, r.decisions[i]));
    if (r.inserts.length > 0) {
      chunk.open ??= openChunk(this.sql, meta.names);
      const until = r.inserts.some((c) => c.expiresAt === null) ? null : Math.max(...r.inserts.map((c) => c.expiresAt!));
      const n = nameBatch(chunk.open, entry.batch, until);
      for (const c of r.inserts) {
        const { b, e } = placeOf(l, c.expiresAt);
        // A compact key holds its batch's number in t (its event time follows from the expiry); any other in r.
        const compact = isCompact(l, e);
        held.set(id(c.stateKey), { b, t: compact ? n : c.eventTime, e, d: c.digest ?? null, r: compact ? null : n, added: true, dropped: 0, conflicts: 0 });
      }
    }
    fresh.forEach((row, i) => {
      const d = r.decisions[i];
      if (d === "e" || d === "l") return;
      const h = held.get(id(stateKeyFor(entry.settings, row)))!;
      if (d !== "x") h.dropped++;
      if (d !== "d") h.conflicts++;
    });
    return r.inserts.length;
  }

  /** Writes the keys added and the counts, and keeps the buckets, the earliest expiry and `front` up to date. */
  private store(meta: PartitionMeta, l: Layout, held: ReadonlyMap<string, Held>): void {
    const intoFront: string[] = [];
    let loose = false;
    for (const [id, h] of held) {
      if (!h.added) continue;
      if (!isCompact(l, h.e)) loose = true;
      const live = this.liveBuckets();
      // A bucket new to the partition holds only what this call adds: its filter starts empty, with no scan.
      if (!live.has(h.b)) live.add(h.b), this.filters?.open(h.b);
      this.filters?.add(h.b, id);
      const e = expiryOf(l, h.b, h.e);
      if (e !== null && (meta.next_expiry === null || e < meta.next_expiry)) meta.next_expiry = e;
      if (h.b === meta.front_b) intoFront.push(`[${e},${keyLiteral(l, id)}]`);
    }
    if (loose && !this.hasR()) {
      addColumn(this.sql, "keys", "r", "INTEGER");
      this.withR = true;
    }
    writeHeld(this.sql, l, held, this.hasR());
    if (intoFront.length > 0) {
      this.sql.exec("INSERT INTO front (e, k) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)", `[${intoFront.join(",")}]`);
    }
  }

  /**
   * Per entry, each duplicate's event-time gap to the kept copy (the delay
   * advisor's), and the kept copy's batch of each conflict (and duplicate,
   * with keepDuplicates), recorded decisions too: the lanes are written again
   * on a retry. Hashed state keeps no event time where the expiry implies it.
   */
  private answers(
    meta: PartitionMeta,
    l: Layout,
    id: (stateKey: string) => string,
    held: ReadonlyMap<string, Held>,
    chunk: { open: NameChunk | null },
    work: readonly { entry: Entry; known: Map<number, Decision> }[],
  ): { gaps: number[][]; kept: KeptBatch[][] } {
    const wanted: { entry: number; at: number; n: number | null }[] = [];
    const gaps = work.map(({ entry, known }, w) => {
      const out: number[] = [];
      entry.rows.forEach((row, at) => {
        const d = known.get(row.index)!;
        if (d === "e" || d === "l") return;
        const h = held.get(id(stateKeyFor(entry.settings, row)));
        if (d === "c" || d === "x" || (d === "d" && entry.settings.keepDuplicates)) wanted.push({ entry: w, at, n: h ? numberOf(l, h) : null });
        if (!countsAsDuplicate(d) || !h || row.eventTime === null) return;
        const first = isCompact(l, h.e) ? null : h.t;
        const kept = first ?? firstEventTimeOf(entry.settings, expiryOf(l, h.b, h.e));
        if (kept !== null) out.push(Math.abs(row.eventTime - kept));
      });
      return out;
    });
    const kept = work.map((): KeptBatch[] => []);
    if (wanted.length > 0) {
      chunk.open ??= openChunk(this.sql, meta.names);
      const names = resolveNames(
        this.sql,
        chunk.open,
        wanted.flatMap((w) => w.n ?? []),
      );
      for (const w of wanted) kept[w.entry].push({ at: w.at, batch: w.n === null ? null : (names.get(w.n) ?? null) });
    }
    return { gaps, kept };
  }

  /** How this partition stores its keys (null: it has stored none yet). */
  private layoutOf(meta: PartitionMeta): Layout | null {
    return meta.width === null ? null : { hashed: meta.hashed, hashKey: meta.hash_key, width: meta.width, base: meta.base };
  }

  private hasR(): boolean {
    this.withR ??= hasReceiptColumn(this.sql);
    return this.withR;
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
    if (!meta) return { rows: 0, bytes: 0, watermark: 0, nextExpiry: null };
    return { ...this.stats(meta, true), ...(meta.hashed === KEY_HASH_UNKEYED ? { unkeyedHash: true as const } : {}) };
  }

  /** The remembered keys in key order, `limit` at a time after `after` (like Spark's state reader). */
  list(epoch: string, after: string, limit: number): StateEntry[] {
    const meta = this.currentMeta(epoch);
    const l = meta && this.layoutOf(meta);
    return l ? listKeys(this.sql, l, after, limit) : [];
  }

  /** The one remembered key `stateKey`, if it is (a list of at most one entry, as list() answers), with its receipt. */
  lookup(epoch: string, stateKey: string): StateReceipt[] {
    const meta = this.currentMeta(epoch);
    const l = meta && this.layoutOf(meta);
    if (!meta || !l) return [];
    return lookupReceipt(this.sql, l, this.hasR(), openChunk(this.sql, meta.names), JSON.stringify([...this.liveBuckets()]), stateKey);
  }

  async drop(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.forgetCaches();
    this.migrate(); // the instance may serve again (the stream created anew)
  }

  /** Whether an entry joins the meta row: small, and the meta row stays small. */
  private fitsPending(pending: PendingEntries, entry: [string, string][]): boolean {
    const size = JSON.stringify(entry).length;
    return size <= PENDING_ENTRY_MAX_BYTES && size + JSON.stringify(pending).length <= PENDING_MAX_BYTES;
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

  /** The buckets that hold keys (stored form), read with a skip scan of the primary key the first time. */
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
      this.cached =
        this.sql
          .exec<PartitionMeta>("SELECT epoch, watermark, rows, next_expiry, width, hashed, front_b, pending, names, base, hash_key FROM meta")
          .toArray()[0] ?? null;
    }
    return this.cached && this.cached.epoch === epoch ? { ...this.cached } : null;
  }

  private meta(epoch: string): PartitionMeta {
    const current = this.currentMeta(epoch);
    if (current) return current;
    // First use, or state left by a deleted incarnation of the stream: start clean.
    this.sql.exec("DELETE FROM keys; DELETE FROM front; DELETE FROM ledger; DELETE FROM kept_names; DELETE FROM receipts;");
    this.sized = undefined;
    this.buckets = new Set();
    this.filters = undefined;
    this.ledgerCount = 0;
    const fresh: PartitionMeta = {
      epoch,
      watermark: 0,
      rows: 0,
      next_expiry: null,
      width: null,
      hashed: 0,
      front_b: null,
      pending: null,
      names: null,
      base: null,
      hash_key: null,
    };
    this.saveMeta(fresh);
    return { ...fresh };
  }

  private saveMeta(m: PartitionMeta): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, front_b, pending, names, base, hash_key) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      m.epoch,
      m.watermark,
      m.rows,
      m.next_expiry,
      m.width,
      m.hashed,
      m.front_b,
      m.pending,
      m.names,
      m.base,
      m.hash_key,
    );
    this.cached = { ...m };
  }

  private forgetCaches(): void {
    this.cached = undefined;
    this.sized = undefined;
    this.buckets = undefined;
    this.filters = undefined;
    this.ledgerCount = undefined;
    this.withR = undefined;
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
    const l = this.layoutOf(meta);
    if (meta.next_expiry === null || meta.next_expiry > meta.watermark || !l || !l.width) return 0;
    const wm = meta.watermark;
    const bucket = bucketAtWatermark(wm, l.width);
    const at = storedBucket(l, bucket);
    let removed = this.sql.exec("DELETE FROM keys WHERE b < ? RETURNING 1", at).toArray().length;
    const chunk = forgetReceipts(this.sql, meta.names ? openChunk(this.sql, meta.names) : null, at, wm);
    meta.names = chunk ? JSON.stringify(chunk) : null;
    const buckets = this.liveBuckets();
    for (const b of buckets) if (b < at) buckets.delete(b), this.filters?.drop(b);
    if (meta.front_b !== null && meta.front_b !== at) {
      this.sql.exec("DELETE FROM front");
      meta.front_b = null;
    }
    if (buckets.has(at) && bucket * l.width <= wm) {
      if (meta.front_b === null) {
        // In front's own order: appending sorted rows is ~8× faster than inserting them at random (0.7 s per million keys).
        this.sql.exec(`INSERT INTO front (e, k) SELECT ${expirySql(l)}, k FROM keys WHERE b = ? ORDER BY keys.e, k`, at);
        meta.front_b = at;
      }
      removed += this.sql.exec("DELETE FROM keys WHERE b = ? AND k IN (SELECT k FROM front WHERE e <= ?) RETURNING 1", at, wm).toArray().length;
      forgetFrontReceipts(this.sql, at, wm);
      this.sql.exec("DELETE FROM front WHERE e <= ?", wm);
    }
    meta.rows -= removed;
    meta.next_expiry = this.earliestExpiry(meta, l);
    return removed;
  }

  /** Exact while `front` holds keys; otherwise the start of the lowest bucket, a lower bound that costs no scan. */
  private earliestExpiry(meta: PartitionMeta, l: Layout): number | null {
    if (meta.front_b !== null) {
      const e = this.sql.exec<{ e: number | null }>("SELECT min(e) AS e FROM front").one().e;
      if (e !== null) return e;
    }
    const b = this.sql.exec<{ b: number | null }>("SELECT min(b) AS b FROM keys").one().b;
    return b === null ? null : absoluteBucket(l, b) * l.width;
  }

  /**
   * The figures every call reports. The storage size is read again once the
   * key count has moved by SIZE_EVERY_ROWS since it was last read (reading
   * it was ~1% of a webhook's CPU, for a figure that moves a few bytes a
   * call); describe() always reads it.
   */
  private stats(meta: PartitionMeta, fresh = false): PartitionStats {
    if (fresh || !this.sized || Math.abs(meta.rows - this.sized.rows) >= SIZE_EVERY_ROWS) this.sized = { rows: meta.rows, bytes: this.sql.databaseSize };
    return { rows: meta.rows, bytes: this.sized.bytes, watermark: meta.watermark, nextExpiry: meta.next_expiry };
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

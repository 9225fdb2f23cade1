/**
 * The partition's decision ledger: per batch, the decisions its rows got
 * here, kept until the micro-batch commits, so that a retry after a crash
 * gives each row the decision it had. A small entry rides in the meta row
 * (which every apply writes anyway: no row of its own to write, nor to
 * delete); others are rows of the ledger table.
 */
import type { Decision } from "../stream/dedup";
import { decodeDecisions } from "../stream/decision-codec";
import { LEDGER_RETENTION_MS, type LedgerEntry } from "./protocol";

/** Ledger entries held in the meta row: entry id → [recorded at, [[batch key, decisions], …]]. */
export type PendingEntries = Record<string, [number, [string, string][]]>;

/** An entry this small rides in the meta row, while those there stay under PENDING_MAX_BYTES; others go to the ledger table. */
export const PENDING_ENTRY_MAX_BYTES = 4_096;
export const PENDING_MAX_BYTES = 32_768;

const LEDGER_PRUNE_EVERY_MS = 3_600_000;

/** Whether an entry joins the meta row: small, and the meta row stays small. */
export function fitsPending(pending: PendingEntries, entry: [string, string][]): boolean {
  const size = JSON.stringify(entry).length;
  return size <= PENDING_ENTRY_MAX_BYTES && size + JSON.stringify(pending).length <= PENDING_MAX_BYTES;
}

/** Drops entries of the meta row older than LEDGER_RETENTION_MS (micro-batches that never committed); true if any went. */
export function prunePending(pending: PendingEntries, now: number): boolean {
  let changed = false;
  for (const [id, [at]] of Object.entries(pending)) if (at < now - LEDGER_RETENTION_MS) changed = delete pending[id];
  return changed;
}

/** The meta row's entries (meta.pending), and their stored form once changed (null: none). */
export const pendingOf = (stored: string | null): PendingEntries => (stored ? JSON.parse(stored) : {});
export const storedPending = (pending: PendingEntries): string | null => (Object.keys(pending).length > 0 ? JSON.stringify(pending) : null);

/** The ledger table, and the entries of the meta row the caller hands in. */
export class DecisionLedger {
  /** rows of the ledger table (read once, then kept): a partition whose entries all fit the meta row never touches it */
  private count: number | undefined;
  private lastPrune = 0;

  constructor(private readonly sql: SqlStorage) {}

  private rows(): number {
    this.count ??= this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM ledger").one().n;
    return this.count;
  }

  /** The entries of committed micro-batches go, from the meta row or the table; true if the meta row's changed. */
  forget(pending: PendingEntries, ids: readonly string[] | undefined): boolean {
    if (!ids || ids.length === 0) return false;
    const elsewhere = ids.filter((id) => !(Object.hasOwn(pending, id) && delete pending[id]));
    if (elsewhere.length > 0 && this.rows() > 0) {
      this.sql.exec("DELETE FROM ledger WHERE batch IN (SELECT value FROM json_each(?))", JSON.stringify(elsewhere));
      this.count = undefined;
    }
    return elsewhere.length < ids.length;
  }

  /**
   * batch → (input index → decision), for the given batches' rows decided
   * here before, from whichever entries hold them (an attempt that failed,
   * and a later one that failed too: decisions never change, so their union):
   * the meta row's, then the ledger table's (one statement; it holds only
   * entries not yet committed, so the scan is short).
   */
  recorded(batches: string[], pending: PendingEntries): Map<string, Map<number, Decision>> {
    const out = new Map<string, Map<number, Decision>>();
    if (batches.length === 0) return out;
    const add = (batch: string, decisions: string) => {
      const known = out.get(batch) ?? new Map<number, Decision>();
      for (const [i, d] of decodeDecisions(decisions)) known.set(i, d);
      out.set(batch, known);
    };
    const wanted = new Set(batches);
    for (const [, entries] of Object.values(pending)) for (const [batch, decisions] of entries) if (wanted.has(batch)) add(batch, decisions);
    if (this.rows() === 0) return out;
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
   * Records a call's decisions ([batch key, encoded decisions] per entry
   * judged): as one entry for the micro-batch `group`, in the meta row if it
   * fits, else as a row; without a group, a row per entry. Then drops the
   * meta row's stale entries. True if the meta row's entries changed.
   */
  record(pending: PendingEntries, group: string | undefined, ledger: [string, string][]): boolean {
    const now = Date.now();
    const perEntry = group === undefined;
    let changed = false;
    const small = ledger.length > 0 && !perEntry && fitsPending(pending, ledger);
    if (small) {
      pending[group!] = [now, ledger];
      changed = true;
    } else if (ledger.length > 0 && perEntry) {
      this.sql.exec(
        `INSERT OR REPLACE INTO ledger (batch, at, decisions)
           SELECT json_extract(value, '$[0]'), ?, json_array(json(value)) FROM json_each(?)`,
        Date.now(),
        JSON.stringify(ledger),
      );
    } else if (ledger.length > 0) {
      // One entry for the micro-batch: one row written, and one deleted once it commits.
      this.sql.exec("INSERT OR REPLACE INTO ledger (batch, at, decisions) VALUES (?, ?, ?)", group!, now, JSON.stringify(ledger));
    }
    if (ledger.length > 0 && !small) this.count = undefined;
    if (prunePending(pending, now)) changed = true;
    return changed;
  }

  /** Every entry not yet forgotten, the meta row's and the table's: [id, recorded at, [[batch key, decisions], …]] (a rescale hands them over). */
  entries(pending: PendingEntries): LedgerEntry[] {
    const out: LedgerEntry[] = Object.entries(pending).map(([id, [at, list]]) => [id, at, list]);
    if (this.rows() === 0) return out;
    for (const r of this.sql.exec<{ batch: string; at: number; decisions: string }>("SELECT batch, at, decisions FROM ledger"))
      out.push([r.batch, r.at, JSON.parse(r.decisions) as [string, string][]]);
    return out;
  }

  /**
   * Entries handed over by the partitions that owned these keys before (a
   * rescale), into the table, each under its id and time: a retry of their
   * batches finds the decisions they recorded there (recorded() unites
   * entries), and they go as entries do (forgotten once committed, pruned
   * after LEDGER_RETENTION_MS). One already held is kept with the
   * handed-over one's pairs added: decisions never change.
   */
  take(entries: readonly LedgerEntry[]): void {
    if (entries.length === 0) return;
    this.sql.exec(
      `INSERT INTO ledger (batch, at, decisions) SELECT value ->> 0, value ->> 1, json(value -> 2) FROM json_each(?) WHERE true
       ON CONFLICT (batch) DO UPDATE SET decisions = (SELECT json_group_array(json(d.value)) FROM
         (SELECT value FROM json_each(ledger.decisions) UNION SELECT value FROM json_each(excluded.decisions)) d)`,
      JSON.stringify(entries),
    );
    this.count = undefined;
  }

  /** At most once an hour, the table's entries older than LEDGER_RETENTION_MS go (micro-batches that never committed). */
  maybePrune(): void {
    const now = Date.now();
    if (now - this.lastPrune < LEDGER_PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    if (this.rows() === 0) return;
    this.sql.exec("DELETE FROM ledger WHERE at < ?", now - LEDGER_RETENTION_MS);
    this.count = undefined;
  }

  /** The table was emptied (a fresh incarnation). */
  emptied(): void {
    this.count = 0;
  }

  /** Counted again next time (after a rollback, or once storage was deleted). */
  forgetCount(): void {
    this.count = undefined;
  }
}

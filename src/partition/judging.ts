/**
 * A call's rows judged against the key rows held, in memory (no SQL): which
 * rows are new to this partition, the layout its first storable row fixes,
 * the keys to read, the decisions and the keys they add, and the answers
 * (gaps, and the kept copies whose batch to name). The Partition reads and
 * writes around it (src/partition/partition.ts).
 */
import { applyBatch, expiryOf as expiryAt, firstEventTimeOf, stateKeyFor, type Decision, type DedupSettings } from "../stream/dedup";
import { bucketOf, bucketWidthFor } from "../stream/expiry-buckets";
import { newHashSecret } from "../stream/keyed-key-hash";
import { encodeDecisions } from "../stream/decision-codec";
import { bucketFor, keepsEventTime, KEY_HASH_KEYED, KEY_TEXT, storedKey, type Held, type Layout } from "./layout";
import { layoutOf, type PartitionMeta } from "./meta";
import type { PartitionRow } from "../stream/row-columns";
import { nameBatch, type NameChunk, type WantedName } from "./batch-names";

/** An entry of the call (a GroupEntry, src/partition/protocol.ts) with its rows out of their wire columns. */
export interface Entry {
  batch: string;
  settings: DedupSettings;
  rows: PartitionRow[];
  resumed?: boolean;
}

/** An entry's work: the decisions recorded before (`known`, filled as it is judged), the rows new here, and whether it is judged now. */
export interface Work {
  entry: Entry;
  known: Map<number, Decision>;
  fresh: PartitionRow[];
  judged: boolean;
}

/** A stored key of a state key (the layout's id: itself, or its hash). */
export type KeyId = (stateKey: string) => string;

/** The open chunk of names as a call uses it: read at its first use (the reader may cost a statement), sealed at the end if used. */
export class NamesInUse {
  open: NameChunk | null = null;

  constructor(private readonly read: () => NameChunk) {}

  chunk(): NameChunk {
    this.open ??= this.read();
    return this.open;
  }
}

/** A row dropped by the watermark before the dedup check (DESIGN §2.4). */
export const isLate = (settings: DedupSettings, watermark: number, r: PartitionRow) =>
  settings.hasEventTime && r.eventTime !== null && r.eventTime <= watermark;

/** Counted in duplicates: a duplicate or a dropped conflict (a rejected one is in rejected). */
const countsAsDuplicate = (d: Decision) => d === "d" || d === "c";

/**
 * Rows this batch already had decided here (an attempt that crashed before
 * its commit) keep their decision; only rows new to this partition are judged.
 */
export function workOf(entries: readonly Entry[], recorded: ReadonlyMap<string, Map<number, Decision>>): Work[] {
  return entries.map((entry) => {
    const known = recorded.get(entry.batch) ?? new Map<number, Decision>();
    const fresh = entry.rows.filter((r) => !known.has(r.index));
    return { entry, known, fresh, judged: fresh.length > 0 || known.size === 0 };
  });
}

/** The partition's layout, fixed in `meta` by the first row it may store (null: none yet, and none in this call). */
export function fixLayout(meta: PartitionMeta, work: readonly Pick<Work, "entry" | "fresh">[]): Layout | null {
  if (meta.width === null) {
    for (const { entry, fresh } of work) {
      const first = fresh.find((r) => !isLate(entry.settings, meta.watermark, r));
      if (first) return fixLayoutFor(meta, entry.settings, expiryAt(entry.settings, first.eventTime));
    }
    return null;
  }
  return layoutOf(meta);
}

/** The partition's layout, fixed in `meta` (if it has none yet) by the settings and the expiry of the first key it stores. */
export function fixLayoutFor(meta: PartitionMeta, settings: DedupSettings, firstExpiry: number | null): Layout {
  if (meta.width === null) {
    meta.width = bucketWidthFor(settings);
    // Hashed keys are keyed from release 27 on: a partition that fixed its layout before keeps the unkeyed hash it stored with.
    meta.hashed = settings.hashedKeys ? KEY_HASH_KEYED : KEY_TEXT;
    meta.hash_key = settings.hashedKeys ? newHashSecret() : null;
    // Version 7 on: buckets counted from the first one, expiries from their bucket's start (a few bytes per key).
    meta.base = meta.width > 0 && firstExpiry !== null ? bucketOf(firstExpiry, meta.width) : null;
  }
  return layoutOf(meta)!;
}

/** Each state key's stored form: itself, or its hash worked out once per call. */
export function keyIdOf(layout: Layout | null): KeyId {
  if (!layout?.hashed) return (stateKey) => stateKey;
  const ids = new Map<string, string>();
  return (stateKey) => {
    let stored = ids.get(stateKey);
    if (stored === undefined) ids.set(stateKey, (stored = storedKey(layout, stateKey)));
    return stored;
  };
}

/** The stored keys this call's rows may meet: its candidates', and those of its recorded drops (for gaps and receipts). */
export function wantedKeys(watermark: number, id: KeyId, work: readonly Work[]): Set<string> {
  const wanted = new Set<string>();
  for (const { entry, known, fresh, judged } of work) {
    if (judged) for (const r of fresh) if (!isLate(entry.settings, watermark, r)) wanted.add(id(stateKeyFor(entry.settings, r)));
    for (const r of entry.rows) {
      const d = known.get(r.index);
      if (d === "d" || d === "c" || d === "x") wanted.add(id(stateKeyFor(entry.settings, r)));
    }
  }
  return wanted;
}

/**
 * Judges every entry due (in order; `held` gains the keys each adds): per
 * entry its decisions, one character per row; the keys added; the rows
 * judged; and the ledger's [batch, encoded decisions] of the entries judged.
 */
export function judgeAll(
  watermark: number,
  layout: Layout | null,
  id: KeyId,
  held: Map<string, Held>,
  names: NamesInUse,
  work: readonly Work[],
): { decisions: string[]; inserted: number; judged: number; ledger: [string, string][] } {
  let inserted = 0;
  let judged = 0;
  const ledger: [string, string][] = [];
  const decisions = work.map(({ entry, known, fresh, judged: judging }) => {
    if (judging) {
      // No layout yet means no row of this call can be stored: every fresh one is late (fixLayout()).
      if (!layout) for (const r of fresh) known.set(r.index, "l");
      else if (fresh.length > 0) inserted += judge(watermark, layout, id, held, names, entry, fresh, known);
      judged += fresh.length;
      ledger.push([entry.batch, encodeDecisions(known)]);
    }
    return entry.rows.map((r) => known.get(r.index)!).join("");
  });
  return { decisions, inserted, judged, ledger };
}

/**
 * Judges an entry's fresh rows against the rows held (and those this call
 * added before it): the first copy of a key not held is kept and added,
 * every other copy is dropped, a conflict where both digests differ.
 * Returns the keys added. Fills `known` with the decisions.
 */
function judge(
  watermark: number,
  l: Layout,
  id: KeyId,
  held: Map<string, Held>,
  names: NamesInUse,
  entry: Entry,
  fresh: PartitionRow[],
  known: Map<number, Decision>,
): number {
  const r = applyBatch(
    entry.settings,
    watermark,
    fresh,
    (k) => held.has(id(k)),
    (k) => held.get(id(k))?.d ?? null,
    id,
  );
  fresh.forEach((row, i) => known.set(row.index, r.decisions[i]));
  if (r.inserts.length > 0) {
    const chunk = names.chunk();
    const until = r.inserts.some((c) => c.expiresAt === null) ? null : Math.max(...r.inserts.map((c) => c.expiresAt!));
    const n = nameBatch(chunk, entry.batch, until);
    for (const c of r.inserts) {
      // A hashed key with an expiry keeps no event time: the expiry implies it.
      const t = keepsEventTime(l, c.expiresAt) ? c.eventTime : null;
      held.set(id(c.stateKey), { b: bucketFor(l, c.expiresAt), expiresAt: c.expiresAt, t, d: c.digest ?? null, n, added: true, dropped: 0, conflicts: 0 });
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

/**
 * Per entry, each duplicate's event-time gap to the kept copy (the delay
 * advisor's), and the kept copies whose batch to name: each conflict's (and
 * duplicate's, with keepDuplicates), recorded decisions too, as the lanes
 * are written again on a retry. Hashed state keeps no event time where the
 * expiry implies it.
 */
export function gapsOf(
  l: Layout,
  id: KeyId,
  held: ReadonlyMap<string, Held>,
  work: readonly Pick<Work, "entry" | "known">[],
): { gaps: number[][]; wanted: WantedName[] } {
  const wanted: WantedName[] = [];
  const gaps = work.map(({ entry, known }, w) => {
    const out: number[] = [];
    entry.rows.forEach((row, at) => {
      const d = known.get(row.index)!;
      if (d === "e" || d === "l") return;
      const h = held.get(id(stateKeyFor(entry.settings, row)));
      if (d === "c" || d === "x" || (d === "d" && entry.settings.keepDuplicates)) wanted.push({ entry: w, at, n: h ? h.n : null });
      if (!countsAsDuplicate(d) || !h || row.eventTime === null) return;
      const first = keepsEventTime(l, h.expiresAt) ? h.t : null;
      const kept = first ?? firstEventTimeOf(entry.settings, h.expiresAt);
      if (kept !== null) out.push(Math.abs(row.eventTime - kept));
    });
    return out;
  });
  return { gaps, wanted };
}

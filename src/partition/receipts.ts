/**
 * Receipts (DESIGN §11): which batch kept a remembered key, and the copies
 * dropped against it. Pure SQL helpers over a Partition's storage: they take
 * its counted `sql` and how its keys are stored (KeyLayout), and each runs the
 * statements the Partition used to run itself.
 *
 * Storage: kept_batches names a batch by a number (n); a hashed key with an
 * expiry holds the number in `keys.t` (its event time follows from the
 * expiry); a text key's batch is found by its expiry when the batch's expiries
 * span a range no other batch's overlaps; any other key names the number in a
 * receipts row (b, k), which also counts the copies dropped against the key.
 * A hashed key with an expiry (the compact layout) counts its dropped copies
 * in the high bits of `t` instead (t = n + dropped·2^32): no receipts row for
 * the common case of a key with duplicates, ~5 B per key less (version 6);
 * only its conflicts, which are rare, take a receipts row.
 */
import { stateKeyFor, type Decision } from "../stream/dedup";
import type { GroupEntry, KeptBatch, PartitionRow, StateReceipt } from "./protocol";

/** How a partition stores its keys, for the statements below. */
export interface KeyLayout {
  hashed: number;
  /** the live expiry buckets as a JSON array (a function: the first call may read them) */
  buckets(): string;
  /** what the keys table holds for a state key: its text, or its 64-bit hash in decimal */
  stored(stateKey: string): string;
  /** a stored key in a JSON array (a hash as an exact integer literal) */
  literal(stored: string): string;
}

/** 2^32: a hashed key with an expiry holds n + dropped·T_SHIFT in `t`. */
export const T_SHIFT = 4_294_967_296;

/**
 * Where a key row keeps its batch's number (kept_batches.n): a hashed key
 * with an expiry stores no event time (the expiry implies it), so its `t`
 * holds the number (in its low 32 bits); any other key has it in its receipt (r, joined). See nameKeptBatch().
 */
const batchNumberOf = (hashed: number) => (hashed ? `CASE WHEN keys.e IS NOT NULL THEN keys.t % ${T_SHIFT} ELSE r.n END` : "r.n");
/** The copies dropped against a key row (joined with its receipt as r): its receipt's, and for a compact hashed key the high bits of `t`. */
const droppedOf = (hashed: number) => (hashed ? `coalesce(r.dropped, 0) + CASE WHEN keys.e IS NOT NULL THEN coalesce(keys.t, 0) / ${T_SHIFT} ELSE 0 END` : "coalesce(r.dropped, 0)");
/** A text key whose receipt names no batch: the batch whose range of expiries holds its expiry (ranges kept are disjoint; see nameKeptBatch()). */
const BY_RANGE = "(SELECT batch FROM (SELECT batch, lo FROM kept_batches WHERE hi >= keys.e ORDER BY hi LIMIT 1) WHERE lo <= keys.e)";
/** A key row's event time: what `t` holds, unless it holds the batch number. */
export const eventTimeOf = (hashed: number) => (hashed ? "CASE WHEN keys.e IS NULL THEN keys.t END" : "keys.t");
/** The kept copy's batch of a key row (joined with its receipt as r). */
const keptBatchOf = (hashed: number) =>
  hashed ? `(SELECT batch FROM kept_batches WHERE kept_batches.n = ${batchNumberOf(hashed)})` : `coalesce((SELECT batch FROM kept_batches WHERE kept_batches.n = r.n), ${BY_RANGE})`;

/** Partition version 6 (src/partition/partition.ts): a hashed partition's keys with an expiry take their receipts' dropped counts into `t`. */
const COMPACT = "(SELECT hashed FROM meta) = 1 AND EXISTS (SELECT 1 FROM keys WHERE keys.b = receipts.b AND keys.k = receipts.k AND keys.e IS NOT NULL)";
export const RECEIPTS_V6 = `
  UPDATE keys SET t = coalesce(keys.t, 0) + r.dropped * ${T_SHIFT} FROM receipts r
   WHERE (SELECT hashed FROM meta) = 1 AND keys.e IS NOT NULL AND r.b = keys.b AND r.k = keys.k AND r.dropped > 0;
  UPDATE receipts SET dropped = 0 WHERE dropped > 0 AND ${COMPACT};
  DELETE FROM receipts WHERE n IS NULL AND dropped = 0 AND conflicts = 0;
`;

/** The next number for kept_batches (see nameKeptBatch()). */
export const nextBatchNumber = (sql: SqlStorage): number => sql.exec<{ n: number }>("SELECT coalesce(max(n), 0) + 1 AS n FROM kept_batches").one().n;

/**
 * The receipts of an entry's dropped rows, in one read of their kept keys:
 * each fresh drop is counted against its key (a recorded one was counted by
 * the attempt that judged it), and the kept copy's batch is returned for
 * each conflict (and each duplicate, with keepDuplicates), recorded ones
 * too, since the lanes are written again on a retry.
 */
export function recordReceipts(sql: SqlStorage, layout: KeyLayout, entry: GroupEntry, known: Map<number, Decision>, freshDrops: PartitionRow[]): KeptBatch[] {
  const wanted: number[] = [];
  entry.rows.forEach((r, i) => {
    const d = known.get(r.index)!;
    if (d === "c" || d === "x" || (d === "d" && entry.settings.keepDuplicates)) wanted.push(i);
  });
  if (wanted.length === 0 && freshDrops.length === 0) return [];
  const stateKeys = new Set([...wanted.map((i) => stateKeyFor(entry.settings, entry.rows[i])), ...freshDrops.map((r) => stateKeyFor(entry.settings, r))]);
  const stored = [...stateKeys].map((k) => layout.stored(k));
  const found = new Map(
    sql
      .exec<{ id: string; b: number; e: number | null; batch: string | null }>(
        `SELECT ${layout.hashed ? "CAST(keys.k AS TEXT)" : "keys.k"} AS id, keys.b AS b, keys.e AS e, ${keptBatchOf(layout.hashed)} AS batch
         FROM keys LEFT JOIN receipts r ON r.b = keys.b AND r.k = keys.k WHERE keys.b IN (SELECT value FROM json_each(?1)) AND keys.k IN (SELECT value FROM json_each(?2))`,
        layout.buckets(), `[${stored.map((k) => layout.literal(k)).join(",")}]`,
      )
      .toArray()
      .map((r) => [String(r.id), r]),
  );
  // Counted per kept key: [b, k, dropped, conflicts, whether dropped goes in t].
  const counts = new Map<string, [number, string, number, number, boolean]>();
  for (const r of freshDrops) {
    const id = layout.stored(stateKeyFor(entry.settings, r));
    const at = found.get(id);
    if (!at) continue;
    const d = known.get(r.index)!;
    const c = counts.get(id) ?? [at.b, layout.literal(id), 0, 0, !!layout.hashed && at.e !== null];
    if (d !== "x") c[2]++;
    if (d !== "d") c[3]++;
    counts.set(id, c);
  }
  const inT = [...counts.values()].filter((c) => c[4] && c[2] > 0);
  if (inT.length > 0) {
    sql.exec(
      `UPDATE keys SET t = coalesce(t, 0) + json_extract(c.value, '$[2]') * ${T_SHIFT} FROM json_each(?) c
       WHERE keys.b = json_extract(c.value, '$[0]') AND keys.k = json_extract(c.value, '$[1]')`,
      `[${inT.map(([b, k, dr]) => `[${b},${k},${dr}]`).join(",")}]`,
    );
  }
  for (const c of inT) c[2] = 0;
  for (const [id, c] of counts) if (c[2] === 0 && c[3] === 0) counts.delete(id);
  if (counts.size > 0) {
    sql.exec(
      `INSERT INTO receipts (b, k, n, dropped, conflicts)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), NULL, json_extract(value, '$[2]'), json_extract(value, '$[3]') FROM json_each(?) WHERE true
       ON CONFLICT (b, k) DO UPDATE SET dropped = dropped + excluded.dropped, conflicts = conflicts + excluded.conflicts`,
      `[${[...counts.values()].map(([b, k, dr, co]) => `[${b},${k},${dr},${co}]`).join(",")}]`,
    );
  }
  return wanted.map((at) => ({ at, batch: found.get(layout.stored(stateKeyFor(entry.settings, entry.rows[at])))?.batch ?? null }));
}

/**
 * Names the batch that kept the keys just inserted, for their receipts,
 * with no column more per key: a number in kept_batches, which a hashed key
 * with an expiry holds in `t` (its event time follows from the expiry; a
 * key costs < 40 B with its digest). A text key keeps its event time in
 * `t`; its batch is found by its expiry when the batch's keys span a range
 * of expiries [lo, hi] that no other such batch's overlaps (batches in
 * event-time order). Any other key names the number in a receipt row. The
 * name goes once the last of its keys has expired (until; null: never).
 */
export function nameKeptBatch(sql: SqlStorage, layout: KeyLayout, batch: { n: number; batch: string }, inserted: { id: string; b: number; e: number | null }[]): void {
  const until = inserted.some((r) => r.e === null) ? null : Math.max(...inserted.map((r) => r.e!));
  let range: [number, number] | null = null;
  if (!layout.hashed && until !== null) {
    const lo = Math.min(...inserted.map((r) => r.e!));
    // Created on a text partition's first batch only: a hashed one has no use for it (a page of storage).
    sql.exec("CREATE INDEX IF NOT EXISTS kept_batches_by_hi ON kept_batches (hi) WHERE hi IS NOT NULL");
    // Ranges are disjoint, so the first one ending at or after lo is the only one that can overlap.
    const next = sql.exec<{ lo: number }>("SELECT lo FROM kept_batches WHERE hi >= ? ORDER BY hi LIMIT 1", lo).toArray()[0];
    if (next === undefined || next.lo > until) range = [lo, until];
  }
  sql.exec("INSERT INTO kept_batches (n, batch, until, lo, hi) VALUES (?, ?, ?, ?, ?)", batch.n, batch.batch, until, range?.[0] ?? null, range?.[1] ?? null);
  const named = range ? [] : inserted.filter((r) => !(layout.hashed && r.e !== null));
  if (named.length > 0) {
    sql.exec(
      `INSERT INTO receipts (b, k, n, dropped, conflicts) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?, 0, 0 FROM json_each(?)`,
      batch.n, `[${named.map((r) => `[${r.b},${layout.literal(String(r.id))}]`).join(",")}]`,
    );
  }
}

/** The one remembered key `stateKey`, if it is, with its receipt. */
export function lookupReceipt(sql: SqlStorage, layout: KeyLayout, stateKey: string): StateReceipt[] {
  const key = layout.hashed ? "printf('#%016x', keys.k)" : "keys.k";
  return sql
    .exec<{ key: string; t: number | null; e: number | null; batch: string | null; dropped: number | null; conflicts: number | null }>(
      `SELECT ${key} AS key, ${eventTimeOf(layout.hashed)} AS t, keys.e AS e, ${keptBatchOf(layout.hashed)} AS batch, ${droppedOf(layout.hashed)} AS dropped, r.conflicts AS conflicts
       FROM keys LEFT JOIN receipts r ON r.b = keys.b AND r.k = keys.k
       WHERE keys.b IN (SELECT value FROM json_each(?1)) AND keys.k = json_extract(?2, '$[0]')`,
      layout.buckets(), `[${layout.literal(layout.stored(stateKey))}]`,
    )
    .toArray()
    .map((r) => ({ key: r.key, eventTime: r.t, expiresAt: r.e, batch: r.batch, dropped: r.dropped ?? 0, conflicts: r.conflicts ?? 0 }));
}

/**
 * Receipts go with their keys (buckets below `at`); batch names once all
 * their keys have expired, looked for among the oldest names only (no
 * index: numbers grow with time, and so, roughly, do expiries).
 */
export function forgetReceipts(sql: SqlStorage, at: number, wm: number): void {
  sql.exec("DELETE FROM receipts WHERE b < ?", at);
  sql.exec("DELETE FROM kept_batches WHERE n IN (SELECT n FROM kept_batches ORDER BY n LIMIT 256) AND until <= ?", wm);
}

/** The receipts of the keys of bucket `at` that expire at or before `wm` (front holds that bucket by expiry). */
export function forgetFrontReceipts(sql: SqlStorage, at: number, wm: number): void {
  sql.exec("DELETE FROM receipts WHERE b = ? AND k IN (SELECT k FROM front WHERE e <= ?)", at, wm);
}

/**
 * How a partition stores a key row (keys: b, k, t, e, d[, r]), and the two
 * statements an apply makes on it: one read of the rows its candidates may
 * match, one upsert of the new keys and of the drop counts. Pure SQL
 * helpers over the Partition's counted `sql` (src/partition/partition.ts).
 *
 * - b: the expiry bucket, k: the key text or its 64-bit hash, d: the kept
 *   copy's content digest.
 * - A partition begun by version 7 stores b relative to `base` (its first
 *   bucket) and e relative to its bucket's start: a few values near zero
 *   instead of two large ones, ~5 B less per key. Older partitions keep both
 *   absolute (base null).
 * - Where the kept copy's batch is (its number, src/partition/receipts.ts)
 *   and how many copies were dropped against it, as number + dropped·2^32:
 *   in t for a hashed key with an expiry (its event time follows from the
 *   expiry: "compact"), in r for any other key. r is added to the table only
 *   when a partition first stores such a key: a hashed partition never pays
 *   its byte.
 */
import { bucketOf } from "../stream/expiry-buckets";
import { keyHash64 } from "../stream/key-hash";
import { keyedKeyHash64 } from "../stream/keyed-key-hash";

/** 2^32: number + dropped·T_SHIFT in t (compact keys) or r (others). */
export const T_SHIFT = 4_294_967_296;

/** meta.hashed: key text, the unkeyed MurmurHash3 of a partition that fixed its layout before release 27, or the keyed SipHash-2-4. */
export const KEY_TEXT = 0;
export const KEY_HASH_UNKEYED = 1;
export const KEY_HASH_KEYED = 2;

export interface Layout {
  hashed: number;
  /** the keyed hash's secret (hashed = KEY_HASH_KEYED), never shown */
  hashKey: string | null;
  /** expiry bucket width in ms (0: one bucket that never expires) */
  width: number;
  /** null: b and e absolute (a partition begun before version 7); else b − base and e − bucket start */
  base: number | null;
}

/** A key row as read or about to be written (b and e as stored). */
export interface Held {
  b: number;
  t: number | null;
  e: number | null;
  d: string | null;
  r: number | null;
  /** inserted by this call (its t or r holds its batch's number, not yet written) */
  added?: boolean;
  /** copies dropped against it and conflicts found by this call */
  dropped: number;
  conflicts: number;
}

/** Whether a key keeps its number and drop count in t (a hashed key with an expiry) or in r. */
export const isCompact = (l: Pick<Layout, "hashed">, e: number | null) => !!l.hashed && e !== null;

/** What the keys table holds for a state key: its text, or its 64-bit hash (keyed, or the unkeyed one of an older partition) in decimal. */
export function storedKey(l: Pick<Layout, "hashed" | "hashKey">, stateKey: string): string {
  if (!l.hashed) return stateKey;
  return l.hashed === KEY_HASH_KEYED ? keyedKeyHash64(l.hashKey!, stateKey) : keyHash64(stateKey);
}

/** A stored key in a JSON array: a hash as an integer literal, which json_extract reads as an exact 64-bit INTEGER (a JS number can't hold it). */
export const keyLiteral = (l: Pick<Layout, "hashed">, stored: string) => (l.hashed ? stored : JSON.stringify(stored));

/** The stored bucket of an absolute expiry bucket, and back. */
export const storedBucket = (l: Layout, bucket: number) => bucket - (l.base ?? 0);
export const absoluteBucket = (l: Layout, stored: number) => stored + (l.base ?? 0);

/** A key's row values for an absolute expiry. */
export function placeOf(l: Layout, expiresAt: number | null): { b: number; e: number | null } {
  const bucket = bucketOf(expiresAt, l.width);
  return { b: storedBucket(l, bucket), e: expiresAt === null || l.base === null ? expiresAt : expiresAt - bucket * l.width };
}

/** The absolute expiry of a stored row. */
export function expiryOf(l: Layout, b: number, e: number | null): number | null {
  return e === null || l.base === null ? e : e + absoluteBucket(l, b) * l.width;
}

/** The same in SQL, over a keys row named `alias`. */
export function expirySql(l: Layout, alias = "keys"): string {
  return l.base === null ? `${alias}.e` : `(${alias}.e + (${alias}.b + ${l.base}) * ${l.width})`;
}

/** The column holding a row's number and drop count (null: it has none, e.g. r before any key needed it). */
export const receiptOf = (l: Pick<Layout, "hashed">, h: Pick<Held, "t" | "e" | "r">) => (isCompact(l, h.e) ? h.t : h.r);

/** The batch number a row names (null: none). */
export function numberOf(l: Pick<Layout, "hashed">, h: Pick<Held, "t" | "e" | "r">): number | null {
  const v = receiptOf(l, h);
  return v === null || v % T_SHIFT === 0 ? null : v % T_SHIFT;
}

/** Copies dropped against a row (before this call's). */
export function droppedOf(l: Pick<Layout, "hashed">, h: Pick<Held, "t" | "e" | "r">): number {
  const v = receiptOf(l, h);
  return v === null ? 0 : Math.floor(v / T_SHIFT);
}

/** Whether the keys table has its r column (read once per object, then kept by the caller). */
export function hasReceiptColumn(sql: SqlStorage): boolean {
  return sql
    .exec<{ name: string }>("SELECT name FROM pragma_table_info('keys')")
    .toArray()
    .some((c) => c.name === "r");
}

/** The rows held for these stored keys, in one statement (the live buckets: eviction ran first, so none has expired). */
export function readHeld(sql: SqlStorage, l: Layout, withR: boolean, buckets: Iterable<number>, stored: Iterable<string>): Map<string, Held> {
  const keys = [...stored];
  if (keys.length === 0) return new Map();
  const rows = sql
    .exec<{ id: string; b: number; t: number | null; e: number | null; d: string | null; r: number | null }>(
      `SELECT ${l.hashed ? "CAST(k AS TEXT)" : "k"} AS id, b, t, e, CAST(d AS TEXT) AS d, ${withR ? "r" : "NULL"} AS r
       FROM keys WHERE b IN (SELECT value FROM json_each(?1)) AND k IN (SELECT value FROM json_each(?2))`,
      JSON.stringify([...buckets]),
      `[${keys.map((k) => keyLiteral(l, k)).join(",")}]`,
    )
    .toArray();
  return new Map(rows.map((r) => [String(r.id), { b: r.b, t: r.t, e: r.e, d: r.d, r: r.r, dropped: 0, conflicts: 0 }]));
}

/**
 * Writes this call's changes to the rows held in one statement: the keys
 * added (with their drop counts) are inserted; a key held before that had
 * copies dropped against it meets its own row, and its count is added there
 * (t or r, by `excluded`). Keys added were absent, so only those conflict.
 */
export function writeHeld(sql: SqlStorage, l: Layout, held: ReadonlyMap<string, Held>, withR: boolean): void {
  const rows: string[] = [];
  for (const [id, h] of held) {
    const compact = isCompact(l, h.e);
    const more = h.dropped * T_SHIFT;
    if (h.added) rows.push(`[${h.b},${keyLiteral(l, id)},${compact ? h.t! + more : h.t},${h.e},${h.d},${compact ? null : h.r! + more}]`);
    // A count only: t and r carry what to add, e and d are not written.
    else if (h.dropped > 0) rows.push(`[${h.b},${keyLiteral(l, id)},${compact ? more : 0},null,null,${compact ? 0 : more}]`);
  }
  // The rows as JSONB, parsed once: each ->> then reads a binary element (~40% less than json_extract on text, measured in workerd).
  const v = (i: number) => `(c.value ->> ${i})`;
  if (rows.length > 0) {
    sql.exec(
      `INSERT INTO keys (b, k, t, e, d${withR ? ", r" : ""}) SELECT ${v(0)}, ${v(1)}, ${v(2)}, ${v(3)}, ${v(4)}${withR ? `, ${v(5)}` : ""} FROM jsonb_each(jsonb(?)) c WHERE true
       ON CONFLICT (b, k) DO UPDATE SET t = CASE WHEN excluded.t = 0 THEN t ELSE coalesce(t, 0) + excluded.t END${withR ? ", r = CASE WHEN excluded.r = 0 THEN r ELSE coalesce(r, 0) + excluded.r END" : ""}`,
      `[${rows.join(",")}]`,
    );
  }
  const conflicts = [...held].filter(([, h]) => h.conflicts > 0);
  if (conflicts.length > 0) {
    // Conflicts are rare: a receipts row each (src/partition/receipts.ts).
    sql.exec(
      `INSERT INTO receipts (b, k, n, dropped, conflicts) SELECT ${v(0)}, ${v(1)}, NULL, 0, ${v(2)} FROM jsonb_each(jsonb(?)) c WHERE true
       ON CONFLICT (b, k) DO UPDATE SET conflicts = conflicts + excluded.conflicts`,
      `[${conflicts.map(([id, h]) => `[${h.b},${keyLiteral(l, id)},${h.conflicts}]`).join(",")}]`,
    );
  }
}

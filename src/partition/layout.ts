/**
 * How a partition stores a key row (keys: b, k, t, e, d[, r]): pure, no SQL
 * (the statements on the rows are src/partition/key-rows.ts).
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

/** A key row as read or about to be written: its fields are the `keys` table's columns, named as stored (b and e as stored). */
export interface Held {
  /** the expiry bucket (relative to meta.base from version 7) */
  b: number;
  /** the event time; a hashed key with an expiry: its batch number and drop count (T_SHIFT) */
  t: number | null;
  /** the expiry within its bucket (null: never expires) */
  e: number | null;
  /** the kept copy's content digest */
  d: string | null;
  /** its batch number and drop count where t can't hold them */
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

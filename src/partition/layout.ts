/**
 * How a partition stores a key: pure, no SQL. Keys live packed in segments
 * (src/stream/key-segment.ts): the open one in the meta row
 * (src/partition/open-segment.ts), sealed ones a row per bucket's run
 * (src/partition/segment-rows.ts).
 *
 * - b: the expiry bucket; a partition begun by version 7 counts it from
 *   `base` (its first bucket), older ones absolutely (base null).
 * - the key is its text, or its 64-bit hash (keyed, or the unkeyed one of a
 *   partition that fixed its layout before release 27), as signed decimal.
 * - a hashed key with an expiry keeps no event time (its expiry implies it);
 *   text keys, and keys that never expire, keep theirs.
 */
import { bucketOf } from "../stream/expiry-buckets";
import { keyHash64 } from "../stream/key-hash";
import type { KeyEntry } from "../stream/key-segment";
import { keyedKeyHash64 } from "../stream/keyed-key-hash";

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
  /** null: buckets absolute (a partition begun before version 7); else counted from this one */
  base: number | null;
}

/** A remembered key as a call reads and changes it. */
export interface Held {
  /** its expiry bucket (stored form) */
  b: number;
  /** its absolute expiry (null: never expires) */
  expiresAt: number | null;
  /** the kept copy's event time where kept (keepsEventTime()) */
  t: number | null;
  /** the kept copy's content digest */
  d: string | null;
  /** the number of the batch that kept it (null: none recorded) */
  n: number | null;
  /** inserted by this call */
  added?: boolean;
  /** copies dropped against it and conflicts found by this call */
  dropped: number;
  conflicts: number;
}

/** Whether a key keeps its event time: a hashed key with an expiry doesn't (the expiry implies it). */
export const keepsEventTime = (l: Pick<Layout, "hashed">, expiresAt: number | null) => !l.hashed || expiresAt === null;

/** What the store holds for a state key: its text, or its 64-bit hash (keyed, or the unkeyed one of an older partition) in decimal. */
export function storedKey(l: Pick<Layout, "hashed" | "hashKey">, stateKey: string): string {
  if (!l.hashed) return stateKey;
  return l.hashed === KEY_HASH_KEYED ? keyedKeyHash64(l.hashKey!, stateKey) : keyHash64(stateKey);
}

/** A stored key in a JSON array: a hash as an integer literal, which json_extract reads as an exact 64-bit INTEGER (a JS number can't hold it). */
export const keyLiteral = (l: Pick<Layout, "hashed">, stored: string) => (l.hashed ? stored : JSON.stringify(stored));

/** How the state reader shows a stored key: text as it is, a hash as `#` and 16 hex digits (its two's complement). */
export function keyLabel(l: Pick<Layout, "hashed">, stored: string): string {
  return l.hashed ? `#${BigInt.asUintN(64, BigInt(stored)).toString(16).padStart(16, "0")}` : stored;
}

/** The stored bucket of an absolute expiry bucket, and back. */
export const storedBucket = (l: Layout, bucket: number) => bucket - (l.base ?? 0);
export const absoluteBucket = (l: Layout, stored: number) => stored + (l.base ?? 0);

/** A key's stored bucket for an absolute expiry. */
export const bucketFor = (l: Layout, expiresAt: number | null) => storedBucket(l, bucketOf(expiresAt, l.width));

/** The absolute expiry of an entry of stored bucket b, its offset e in the bucket. */
export const expiryOf = (l: Layout, b: number, e: number | null) => (e === null ? null : e + absoluteBucket(l, b) * l.width);

/**
 * A held key as a segment entry. A key that expires stores its event time as
 * its lag behind the expiry: the same for every key of a within-watermark
 * stream (the delay) or an event-time-key one (0), so the column costs
 * nothing (src/stream/key-segment.ts).
 */
export function entryOf(l: Layout, key: string, h: Held): KeyEntry {
  const e = h.expiresAt === null ? null : h.expiresAt - absoluteBucket(l, h.b) * l.width;
  const t = h.t === null || h.expiresAt === null ? h.t : h.expiresAt - h.t;
  return { key, b: h.b, e, t, d: h.d, n: h.n, dropped: h.dropped };
}

/** A segment entry as a held key (before this call's drops). */
export function heldOf(l: Layout, e: KeyEntry): Held {
  const expiresAt = expiryOf(l, e.b, e.e);
  return { b: e.b, expiresAt, t: e.t === null || expiresAt === null ? e.t : expiresAt - e.t, d: e.d, n: e.n, dropped: 0, conflicts: 0 };
}

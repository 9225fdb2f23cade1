/**
 * The key segments' format (src/stream/key-segment.ts): what an entry is,
 * the flags and versions a table's header holds, and a key's bytes. Shared
 * by the writer (./key-segment.ts) and the reader (./segment-table.ts).
 */

/** A remembered key as a segment holds it. */
export interface KeyEntry {
  /** the stored key: its text, or its 64-bit hash as a signed decimal (src/partition/layout.ts) */
  key: string;
  /** its expiry bucket (stored form); a sealed segment's entries share their row's */
  b: number;
  /** its expiry's offset in the bucket, ms (null: never expires) */
  e: number | null;
  /** the kept copy's event time as stored (src/partition/layout.ts: its lag behind the expiry where it expires; null: none) */
  t: number | null;
  /** the kept copy's content digest: as a row carries it (signed 64-bit decimal), or as stored (its digestWord, in decimal); null: none */
  d: string | null;
  /** the number of the batch that kept it (null: none recorded) */
  n: number | null;
  /** copies dropped against it */
  dropped: number;
}

/** Copies dropped against a key kept elsewhere: the key, its kept copy's batch number and bucket, the count. */
export interface DropEntry {
  key: string;
  b: number;
  n: number | null;
  dropped: number;
}

/** The version written; VERSION_64 (64-bit digests) is read too. */
export const VERSION = 2;
export const VERSION_64 = 1;
export const F_HASHED = 1;
export const F_BUCKETS = 2;
export const F_E = 4;
export const F_T = 8;
export const F_D = 16;
export const F_D_NULLS = 32;
export const F_N = 64;
/** version 2: hashed keys as 7 bytes under a directory of their first byte (the keys with each); text keys by length, an offset every KEY_BLOCK keys */
export const F_COMPACT = 128;

/** Text keys per stored offset (a key's start is its block's offset plus the lengths before it). */
export const KEY_BLOCK = 32;
/** Hashed keys from which the first-byte directory (256 counts, a byte each at these sizes) costs less than the byte it saves each. */
export const DIRECTORY_FROM = 320;

const encoder = new TextEncoder();

/** A stored key's bytes, in the order keys are listed: a hash as 8 bytes big-endian (its unsigned order), text as UTF-8. */
export function keyBytes(hashed: boolean, key: string): Uint8Array {
  if (!hashed) return encoder.encode(key);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(key)));
  return out;
}

/** Bytewise order of stored keys' bytes: the order a segment's sorted tables keep. */
export function compareKeyBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** The key bytes an entry was read with (entry()), so that merging a segment again need not encode its keys again. */
export const readWith = new WeakMap<KeyEntry, Uint8Array>();

/** An entry's key bytes: the ones it was read with, or encoded now. */
export const entryKeyBytes = (hashed: boolean, e: KeyEntry): Uint8Array => readWith.get(e) ?? keyBytes(hashed, e.key);

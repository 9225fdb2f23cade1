/**
 * The keyed 64-bit key hash of compact state (`stateKeys: "hashed"`, every
 * partition that first stores a key from this release on): SipHash-2-4 of the
 * state key's UTF-8 under a 128-bit secret the partition draws when it fixes
 * its layout and never shows. The unkeyed MurmurHash3 (./key-hash.ts) lets
 * anyone who can send a row compute, in seconds, a key that collides with a
 * victim's id, so that the victim's real event is dropped as a duplicate;
 * without the secret, a collision is as likely as by chance: a new key is
 * taken for a duplicate with probability n/2^64, n the keys its partition
 * holds (10 million keys: one wrong "duplicate" in ~1.8·10^12 events).
 *
 * Stored as the unkeyed hash is: the 64 bits as a signed integer, in decimal.
 */
import SipHash from "siphash";
import { int64Decimal } from "./content";

const encoder = new TextEncoder();
const HEX_KEY = /^[0-9a-f]{32}$/;

/** A new secret: 16 random bytes as 32 hex digits (what a partition stores). */
export function newHashSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** The secret as SipHash's four little-endian 32-bit words, parsed once per secret. */
const parsed = new Map<string, Uint32Array>();
function keyWords(secret: string): Uint32Array {
  let words = parsed.get(secret);
  if (words === undefined) {
    if (!HEX_KEY.test(secret)) throw new Error("a key-hash secret is 32 lower-case hex digits");
    words = new Uint32Array(4);
    for (let i = 0; i < 16; i++) words[i >> 2] |= parseInt(secret.slice(2 * i, 2 * i + 2), 16) << ((i & 3) * 8);
    if (parsed.size > 1024) parsed.clear(); // one per partition an isolate holds: a bound, not a cache policy
    parsed.set(secret, words);
  }
  return words;
}

/** SipHash-2-4 of `bytes` under `secret`, as its (high, low) 32-bit halves. */
export function sipHash24(secret: string, bytes: Uint8Array): { h: number; l: number } {
  return SipHash.hash(keyWords(secret), bytes);
}

/** The state key's keyed 64-bit hash as SQLite stores it: a signed integer, in decimal. */
export function keyedKeyHash64(secret: string, stateKey: string): string {
  const { h, l } = sipHash24(secret, encoder.encode(stateKey));
  return int64Decimal(h, l);
}

/** How the state reader shows a keyed hash: `#` and 16 hex digits (high half, then low), as the unkeyed one is shown. */
export function keyedKeyHashLabel(secret: string, stateKey: string): string {
  const { h, l } = sipHash24(secret, encoder.encode(stateKey));
  return `#${(h >>> 0).toString(16).padStart(8, "0")}${(l >>> 0).toString(16).padStart(8, "0")}`;
}

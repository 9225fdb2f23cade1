/**
 * The 64-bit key hash of compact state (`stateKeys: "hashed"`): a partition
 * stores this instead of the key's text. Like partitionFor, it is part of the
 * stored layout and never changes.
 *
 * keyHash64(key) = the first 64 bits (h1, h2) of MurmurHash3_x86_128(utf8(key),
 * seed 0), read as a signed 64-bit integer h1·2^32 + h2. It is returned as a
 * decimal string because SQLite holds it exactly and a JS number can't.
 *
 * Two distinct keys collide with probability 2^-64; a new key is taken for a
 * duplicate only if it collides with one of the n keys its partition holds,
 * n/2^64 per event: 10 million keys per partition at 50,000 events/s is one
 * wrong "duplicate" in about a millennium (README: Compact state).
 */

import { murmur3x86_128 } from "../lib/murmur3";

const encoder = new TextEncoder();

/** The key's 64-bit hash as SQLite stores it: a signed integer, in decimal. */
export function keyHash64(stateKey: string): string {
  const [h1, h2] = murmur3x86_128(encoder.encode(stateKey));
  return BigInt.asIntN(64, (BigInt(h1) << 32n) | BigInt(h2)).toString();
}

/** How the state reader shows a hashed key: `#` and 16 hex digits (h1 then h2). */
export function keyHashLabel(stateKey: string): string {
  const [h1, h2] = murmur3x86_128(encoder.encode(stateKey));
  return `#${h1.toString(16).padStart(8, "0")}${h2.toString(16).padStart(8, "0")}`;
}

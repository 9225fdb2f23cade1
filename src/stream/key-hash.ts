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
const encoder = new TextEncoder();

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/** MurmurHash3_x86_128 as four unsigned 32-bit words h1..h4 (the reference implementation's order). */
export function murmur3x86_128(bytes: Uint8Array, seed = 0): [number, number, number, number] {
  let h1 = seed | 0,
    h2 = seed | 0,
    h3 = seed | 0,
    h4 = seed | 0;
  const n = bytes.length;
  const blocks = n - (n % 16);
  const word = (i: number) => bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
  for (let i = 0; i < blocks; i += 16) {
    let k1 = word(i),
      k2 = word(i + 4),
      k3 = word(i + 8),
      k4 = word(i + 12);
    k1 = Math.imul(rotl(Math.imul(k1, C1), 15), C2);
    h1 ^= k1;
    h1 = rotl(h1, 19);
    h1 = (h1 + h2) | 0;
    h1 = (Math.imul(h1, 5) + 0x561ccd1b) | 0;
    k2 = Math.imul(rotl(Math.imul(k2, C2), 16), C3);
    h2 ^= k2;
    h2 = rotl(h2, 17);
    h2 = (h2 + h3) | 0;
    h2 = (Math.imul(h2, 5) + 0x0bcaa747) | 0;
    k3 = Math.imul(rotl(Math.imul(k3, C3), 17), C4);
    h3 ^= k3;
    h3 = rotl(h3, 15);
    h3 = (h3 + h4) | 0;
    h3 = (Math.imul(h3, 5) + 0x96cd1c35) | 0;
    k4 = Math.imul(rotl(Math.imul(k4, C4), 18), C1);
    h4 ^= k4;
    h4 = rotl(h4, 13);
    h4 = (h4 + h1) | 0;
    h4 = (Math.imul(h4, 5) + 0x32ac3b17) | 0;
  }
  // The tail: up to 15 bytes into k1..k4, little-endian, then mixed as the blocks are.
  const tail = [0, 0, 0, 0];
  for (let i = blocks; i < n; i++) tail[(i - blocks) >> 2] ^= bytes[i] << (((i - blocks) & 3) * 8);
  const rest = n - blocks;
  if (rest > 12) h4 ^= Math.imul(rotl(Math.imul(tail[3], C4), 18), C1);
  if (rest > 8) h3 ^= Math.imul(rotl(Math.imul(tail[2], C3), 17), C4);
  if (rest > 4) h2 ^= Math.imul(rotl(Math.imul(tail[1], C2), 16), C3);
  if (rest > 0) h1 ^= Math.imul(rotl(Math.imul(tail[0], C1), 15), C2);
  h1 ^= n;
  h2 ^= n;
  h3 ^= n;
  h4 ^= n;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

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

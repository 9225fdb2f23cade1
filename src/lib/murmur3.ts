/**
 * MurmurHash3 (Austin Appleby's reference, public domain): x86_32 for bytes
 * and for ASCII text without encoding, and x86_128. Callers that store or
 * route by these hashes (src/stream/partition-for.ts, src/stream/key-hash.ts) rely on
 * them never changing.
 */
const encoder = new TextEncoder();

/** One 4-byte block (or the tail) of murmur3_x86_32, scrambled. */
function scramble(k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, 0x1b873593);
}

/** The state after one block. */
const mixBlock = (h: number, k: number): number => {
  h ^= scramble(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
};

/** The length folded in, then the final avalanche. */
function finish(h: number, n: number): number {
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function murmur3(bytes: Uint8Array, seed = 0): number {
  let h = seed >>> 0;
  const n = bytes.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) h = mixBlock(h, bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
  let k = 0;
  switch (n & 3) {
    case 3:
      k ^= bytes[blocks + 2] << 16; // falls through
    case 2:
      k ^= bytes[blocks + 1] << 8; // falls through
    case 1:
      k ^= bytes[blocks];
      h ^= scramble(k);
  }
  return finish(h, n);
}

/**
 * murmur3(utf8(text), seed) without encoding, for the usual ASCII text (every
 * row's key is routed): four characters are a block as four bytes would be.
 * Text with any other character is encoded and hashed as bytes.
 */
export function murmur3Utf8(text: string, seed = 0): number {
  let h = seed >>> 0;
  const n = text.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    const b0 = text.charCodeAt(i),
      b1 = text.charCodeAt(i + 1),
      b2 = text.charCodeAt(i + 2),
      b3 = text.charCodeAt(i + 3);
    if ((b0 | b1 | b2 | b3) >= 0x80) return murmur3(encoder.encode(text), seed);
    h = mixBlock(h, b0 | (b1 << 8) | (b2 << 16) | (b3 << 24));
  }
  let k = 0;
  for (let i = n - 1; i >= blocks; i--) {
    const b = text.charCodeAt(i);
    if (b >= 0x80) return murmur3(encoder.encode(text), seed);
    k = (k << 8) | b;
  }
  if (n & 3) h ^= scramble(k);
  return finish(h, n);
}

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

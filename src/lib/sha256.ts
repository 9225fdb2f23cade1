/**
 * SHA-256 (FIPS 180-4), synchronous. The dedup step is synchronous (a batch is
 * planned in one pass, in the Worker and in the reference model alike), and
 * WebCrypto's digest is asynchronous, so content keys and content digests use
 * this; test/unit/stream/content.test.ts checks it against node:crypto.
 *
 * It runs once per row of an id-keyed stream, so it allocates nothing per
 * call: the message is written into a reused scratch buffer (UTF-8 straight
 * from the string), padded in place, and compressed with the state in local
 * variables (test/unit/stream/content-oracle.test.ts holds it to the first version).
 */
/** The round constants (FIPS 180-4 §4.2.2). */
export const SHA256_K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const K = SHA256_K;

// Reused between calls: every function here is synchronous and runs one call at a time.
const w = new Int32Array(64);
/** The last digest's eight words (signed; `>>> 0` reads one unsigned). */
const state = new Int32Array(8);
let scratch = new Uint8Array(1024);
const encoder = new TextEncoder();

/** Compresses the 64-byte blocks of `m[0, end)` into `state`. */
function compress(m: Uint8Array, end: number): void {
  let h0 = state[0],
    h1 = state[1],
    h2 = state[2],
    h3 = state[3],
    h4 = state[4],
    h5 = state[5],
    h6 = state[6],
    h7 = state[7];
  for (let off = 0; off < end; off += 64) {
    for (let i = 0, j = off; i < 16; i++, j += 4) w[i] = (m[j] << 24) | (m[j + 1] << 16) | (m[j + 2] << 8) | m[j + 3];
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15];
      const y = w[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = h0,
      b = h1,
      c = h2,
      d = h3,
      e = h4,
      f = h5,
      g = h6,
      h = h7;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  state[0] = h0;
  state[1] = h1;
  state[2] = h2;
  state[3] = h3;
  state[4] = h4;
  state[5] = h5;
  state[6] = h6;
  state[7] = h7;
}

/** Past this, a message gets a buffer of its own: a rare large row must not keep its size of memory. */
const KEEP_UP_TO = 1 << 16;

/** A scratch buffer of at least `size` bytes (grown by doubling, kept for the next call). */
function scratchOf(size: number): Uint8Array {
  if (size > KEEP_UP_TO) return new Uint8Array(size);
  if (scratch.length < size) {
    let n = scratch.length;
    while (n < size) n *= 2;
    scratch = new Uint8Array(n);
  }
  return scratch;
}

/** Hashes the `n` message bytes at the start of `m`, which has room for the padding (the next multiple of 64 past n + 8). */
function finish(m: Uint8Array, n: number): Int32Array {
  const end = (((n + 8) >> 6) + 1) << 6;
  m[n] = 0x80;
  m.fill(0, n + 1, end - 8);
  const hiBits = Math.floor(n / 0x20000000);
  const loBits = (n << 3) >>> 0;
  m[end - 8] = hiBits >>> 24;
  m[end - 7] = hiBits >>> 16;
  m[end - 6] = hiBits >>> 8;
  m[end - 5] = hiBits;
  m[end - 4] = loBits >>> 24;
  m[end - 3] = loBits >>> 16;
  m[end - 2] = loBits >>> 8;
  m[end - 1] = loBits;
  state[0] = 0x6a09e667;
  state[1] = 0xbb67ae85 | 0;
  state[2] = 0x3c6ef372;
  state[3] = 0xa54ff53a | 0;
  state[4] = 0x510e527f;
  state[5] = 0x9b05688c | 0;
  state[6] = 0x1f83d9ab;
  state[7] = 0x5be0cd19;
  compress(m, end);
  return state;
}

/**
 * The SHA-256 of `text` as UTF-8 (what TextEncoder gives: a lone surrogate is
 * U+FFFD), as eight big-endian words, signed. The array is reused: read it
 * before the next call.
 */
export function sha256Utf8(text: string): Int32Array {
  const len = text.length;
  // UTF-8 is at most 3 bytes per UTF-16 unit; plus the padding.
  const m = scratchOf(len * 3 + 72);
  let n = 0;
  // ASCII, the usual case, byte by byte; from the first other character on, the encoder writes the rest.
  for (; n < len; n++) {
    const c = text.charCodeAt(n);
    if (c >= 0x80) break;
    m[n] = c;
  }
  if (n < len) n += encoder.encodeInto(text.slice(n), m.subarray(n)).written;
  return finish(m, n);
}

/** The digest as eight big-endian 32-bit words. */
export function sha256Words(bytes: Uint8Array): Uint32Array {
  const m = scratchOf(bytes.length + 72);
  m.set(bytes);
  return new Uint32Array(finish(m, bytes.length));
}

export function sha256HexSync(bytes: Uint8Array): string {
  return Array.from(sha256Words(bytes), (x) => x.toString(16).padStart(8, "0")).join("");
}

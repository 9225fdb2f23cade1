/**
 * The content digest as it was first written (src/lib/jcs.ts, src/lib/sha256.ts and
 * content.ts before they were made faster), kept verbatim as the oracle the
 * faster code must match bit for bit: the digests are stored in partitions'
 * state and compared with later copies', so a changed digest would turn a
 * duplicate into a conflict. test/unit/stream/content-oracle.test.ts compares them.
 */
import { withoutFields } from "../../src/stream/content";
import { SHA256_K } from "../../src/lib/sha256";

export function oracleCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("JCS has no representation for NaN or Infinity");
    if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") {
      throw new TypeError(`JCS has no representation for ${typeof value}`);
    }
    return JSON.stringify(value);
  }
  // Plain loops: this runs for every row of an id-keyed stream.
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + oracleCanonicalJson(value[i] === undefined ? null : value[i]);
    return out + "]";
  }
  const obj = value as Record<string, unknown>;
  out = "{";
  for (const k of Object.keys(obj).sort()) {
    const v = obj[k];
    if (v === undefined) continue;
    out += (out.length > 1 ? "," : "") + JSON.stringify(k) + ":" + oracleCanonicalJson(v);
  }
  return out + "}";
}

// The round constants are FIPS 180-4's (the faster version's table; node:crypto checks both).
const K = SHA256_K;

const ror = (x: number, n: number) => (x >>> n) | (x << (32 - n));

// The message schedule, reused: the function is synchronous and runs one call at a time.
const w = new Uint32Array(64);

/** The digest as eight big-endian 32-bit words. */
export function oracleSha256Words(bytes: Uint8Array): Uint32Array {
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  // The message, a 1 bit, zeros, and its length in bits as 64 bits big-endian, to a multiple of 64 bytes.
  const n = bytes.length;
  const padded = new Uint8Array((((n + 8) >> 6) + 1) << 6);
  padded.set(bytes);
  padded[n] = 0x80;
  const hiBits = Math.floor(n / 0x20000000);
  const loBits = (n << 3) >>> 0;
  const end = padded.length;
  padded[end - 8] = hiBits >>> 24;
  padded[end - 7] = hiBits >>> 16;
  padded[end - 6] = hiBits >>> 8;
  padded[end - 5] = hiBits;
  padded[end - 4] = loBits >>> 24;
  padded[end - 3] = loBits >>> 16;
  padded[end - 2] = loBits >>> 8;
  padded[end - 1] = loBits;
  for (let off = 0; off < end; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + i * 4;
      w[i] = (padded[j] << 24) | (padded[j + 1] << 16) | (padded[j + 2] << 8) | padded[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15];
      const y = w[i - 2];
      const s0 = ror(x, 7) ^ ror(x, 18) ^ (x >>> 3);
      const s1 = ror(y, 17) ^ ror(y, 19) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = h[0],
      b = h[1],
      c = h[2],
      d = h[3],
      e = h[4],
      f = h[5],
      g = h[6],
      hh = h[7];
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  return h;
}

const encoder = new TextEncoder();

/** Deleting the paths from a copy: still src/stream/content.ts's withoutFields, unchanged (test/unit/stream/content.test.ts pins it). */
export const oracleWithoutFields = withoutFields;

/** The canonical JSON of `row` without `exclude`, as UTF-8. */
export function oracleCanonicalContent(row: Record<string, unknown>, exclude: readonly string[]): Uint8Array {
  return encoder.encode(oracleCanonicalJson(oracleWithoutFields(row, exclude)));
}

/** A content key: the hex SHA-256 of the row's canonical JSON without the excluded fields. */
export function oracleContentHash(row: Record<string, unknown>, exclude: readonly string[]): string {
  const h = oracleSha256Words(oracleCanonicalContent(row, exclude));
  let hex = "";
  for (let i = 0; i < 8; i++) hex += h[i].toString(16).padStart(8, "0");
  return hex;
}

/** The 64-bit content digest, signed, in decimal (BigInt here: the oracle need not be fast). */
export function oracleContentDigest(row: Record<string, unknown>, volatile: readonly string[]): string {
  const h = oracleSha256Words(oracleCanonicalContent(row, volatile));
  return BigInt.asIntN(64, (BigInt(h[0]) << 32n) | BigInt(h[1])).toString();
}

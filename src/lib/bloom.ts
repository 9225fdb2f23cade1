/**
 * A fixed-size Bloom filter over strings: "absent" is certain, "maybe" is a
 * guess (a false "maybe" at the rate its bits per key give). Pure; its bits
 * can be stored and read back (a Coordinator keeps its committed ids'
 * filters in SQLite, src/coordinator/id-index.ts). Used by the partitions'
 * key segments' filters (src/stream/segment-index.ts) too.
 */
import { murmur3Utf8 } from "./murmur3";

/** k: hashes per key. With 12 bits per key ~0.3% false "maybe"; with 16, ~0.06%. */
export const BLOOM_HASHES = 8;

/** A key's two 32-bit hashes for double hashing (computed once, probed in many filters). */
export type BloomHash = readonly [number, number];

/**
 * The project's murmur3 (src/lib/murmur3.ts) with two seeds of its own. Not
 * PARTITION_SEED: every key of a partition shares that hash modulo P, which
 * would bias the bits.
 */
export function bloomHash(key: string): BloomHash {
  return [murmur3Utf8(key, 0x9747b28c), (murmur3Utf8(key, 0x85ebca6b) | 1) >>> 0];
}

export class Bloom {
  readonly bits: Uint32Array;
  /** bits in the filter (a multiple of 32) */
  readonly size: number;
  count = 0;

  constructor(
    readonly capacity: number,
    bitsPerKey: number,
    /** stored bits (fromBytes) */
    bits?: Uint32Array,
  ) {
    this.size = bits ? bits.length * 32 : Math.max(32, Math.ceil((capacity * bitsPerKey) / 32) * 32);
    this.bits = bits ?? new Uint32Array(this.size / 32);
  }

  add(h: BloomHash): void {
    for (let i = 0; i < BLOOM_HASHES; i++) {
      const at = ((h[0] + Math.imul(i, h[1])) >>> 0) % this.size;
      this.bits[at >>> 5] |= 1 << (at & 31);
    }
    this.count++;
  }

  has(h: BloomHash): boolean {
    for (let i = 0; i < BLOOM_HASHES; i++) {
      const at = ((h[0] + Math.imul(i, h[1])) >>> 0) % this.size;
      if ((this.bits[at >>> 5] & (1 << (at & 31))) === 0) return false;
    }
    return true;
  }

  /** The bits as bytes (little-endian words), to store. */
  toBytes(): Uint8Array {
    const out = new Uint8Array(this.bits.length * 4);
    const view = new DataView(out.buffer);
    this.bits.forEach((w, i) => view.setUint32(i * 4, w, true));
    return out;
  }

  /** A filter from stored bytes (toBytes()); `count` is what it held. */
  static fromBytes(bytes: Uint8Array, count: number): Bloom {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const bits = new Uint32Array(Math.floor(bytes.byteLength / 4));
    for (let i = 0; i < bits.length; i++) bits[i] = view.getUint32(i * 4, true);
    const b = new Bloom(count, 0, bits);
    b.count = count;
    return b;
  }
}

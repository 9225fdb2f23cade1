/**
 * Which sealed segments may hold a key, in memory (a partition's index over
 * its key segments, src/stream/key-segment.ts): a Bloom filter per segment,
 * so that a lookup reads only the segments that may hold the key, and a new
 * key usually none. The filters are not stored (they would cost 3 bytes a
 * key): a partition makes them from its segments' keys when it wakes.
 *
 * Never a false "absent": a segment's filter is made from all its kept keys
 * whenever it is written or read back. A false "maybe" costs a segment read,
 * never a decision. Memory: SEGMENT_FILTER_BITS per key (3 bytes), so 27 MB
 * for the 9 million keys a partition holds at the seed's sizing
 * (docs/SCALING.md). Pure: the rows are the caller's.
 */
import { Bloom, type BloomHash } from "../lib/bloom";
import { murmur3 } from "../lib/murmur3";
import { keyBytes } from "./key-segment";

/** Bits per kept key in a segment's filter: with the filter's 8 hashes, ~4·10⁻⁵ false "maybe" per segment probed. */
export const SEGMENT_FILTER_BITS = 24;

/** A sealed segment as the index knows it. */
export interface IndexedSegment {
  b: number;
  s: number;
  /** kept keys in it (dead ones included until a rewrite drops them) */
  n: number;
  /** its stored size in bytes (a seal adds to a bucket's newest segment while it is small) */
  bytes: number;
  filter: Bloom;
}

/**
 * A stored key's filter hashes, from its bytes (keyBytes()): a hashed key's
 * own 64 bits (already uniform; no hashing again at wake), text's
 * MurmurHash3 under two seeds of their own.
 */
export function filterHash(hashed: boolean, key: Uint8Array): BloomHash {
  if (hashed) {
    const hi = ((key[0] << 24) | (key[1] << 16) | (key[2] << 8) | key[3]) >>> 0;
    const lo = ((key[4] << 24) | (key[5] << 16) | (key[6] << 8) | key[7]) >>> 0;
    return [lo, (hi | 1) >>> 0];
  }
  return [murmur3(key, 0x9747b28c), (murmur3(key, 0x85ebca6b) | 1) >>> 0];
}

/** A filter over a segment's kept keys (their bytes). */
export function segmentFilter(hashed: boolean, keys: Iterable<Uint8Array>, count: number): Bloom {
  const f = new Bloom(Math.max(1, count), SEGMENT_FILTER_BITS);
  for (const k of keys) f.add(filterHash(hashed, k));
  return f;
}

export class SegmentIndex {
  /** bucket → its segments, oldest first */
  private readonly buckets = new Map<number, IndexedSegment[]>();

  add(seg: IndexedSegment): void {
    const list = this.buckets.get(seg.b) ?? [];
    const at = list.findIndex((x) => x.s === seg.s);
    if (at >= 0) list[at] = seg;
    else list.push(seg), list.sort((x, y) => x.s - y.s);
    this.buckets.set(seg.b, list);
  }

  /** The buckets that have sealed segments. */
  bucketList(): number[] {
    return [...this.buckets.keys()];
  }

  segmentsOf(b: number): readonly IndexedSegment[] {
    return this.buckets.get(b) ?? [];
  }

  /** The bucket's newest segment (the one a seal may merge into). */
  tailOf(b: number): IndexedSegment | undefined {
    const list = this.buckets.get(b);
    return list?.[list.length - 1];
  }

  dropBucket(b: number): void {
    this.buckets.delete(b);
  }

  /** The highest segment number in use (new ones count on from it). */
  maxS(): number {
    let m = 0;
    for (const list of this.buckets.values()) for (const x of list) m = Math.max(m, x.s);
    return m;
  }

  /** Per segment that may hold any of these stored keys, which of them. */
  maybeHeld(hashed: boolean, keys: Iterable<string>): Map<IndexedSegment, string[]> {
    const out = new Map<IndexedSegment, string[]>();
    const all: IndexedSegment[] = [];
    for (const list of this.buckets.values()) all.push(...list);
    if (all.length === 0) return out;
    for (const k of keys) {
      const h = filterHash(hashed, keyBytes(hashed, k));
      for (const seg of all) {
        if (!seg.filter.has(h)) continue;
        const list = out.get(seg);
        if (list) list.push(k);
        else out.set(seg, [k]);
      }
    }
    return out;
  }

  /** Memory the filters take, in bytes. */
  get bytes(): number {
    let n = 0;
    for (const list of this.buckets.values()) for (const x of list) n += x.filter.bits.byteLength;
    return n;
  }
}

/**
 * Which sealed segments may hold a key, in memory (a partition's index over
 * its key segments, src/stream/key-segment.ts): a Bloom filter per segment,
 * stored in the segment's row and read back on wake, so that a lookup reads
 * only the segments that may hold the key, and a new key usually none.
 *
 * Never a false "absent": a segment's filter is made from all its kept keys
 * when it is written. A false "maybe" costs a segment read, never a
 * decision. Memory: SEGMENT_FILTER_BITS per key (3 bytes), so 27 MB for
 * the 9 million keys a partition holds at the seed's sizing (docs/SCALING.md).
 * Pure: the rows are the caller's.
 */
import { Bloom, bloomHash, type BloomHash } from "../lib/bloom";

/** Bits per kept key in a segment's filter: with the filter's 8 hashes, ~4·10⁻⁵ false "maybe" per segment probed. */
export const SEGMENT_FILTER_BITS = 24;

/** A sealed segment as the index knows it. */
export interface IndexedSegment {
  b: number;
  s: number;
  /** kept keys in it (dead ones included until a rewrite drops them) */
  n: number;
  /** its stored size in bytes (the key store merges a bucket's small tail) */
  bytes: number;
  filter: Bloom;
}

/** A filter over these stored keys, as a segment row keeps it. */
export function segmentFilter(keys: readonly string[]): Bloom {
  const f = new Bloom(Math.max(1, keys.length), SEGMENT_FILTER_BITS);
  for (const k of keys) f.add(bloomHash(k));
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
  maybeHeld(keys: Iterable<string>): Map<IndexedSegment, string[]> {
    const out = new Map<IndexedSegment, string[]>();
    const all: IndexedSegment[] = [];
    for (const list of this.buckets.values()) all.push(...list);
    if (all.length === 0) return out;
    for (const k of keys) {
      const h: BloomHash = bloomHash(k);
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

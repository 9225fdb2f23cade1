/**
 * Which expiry buckets may hold a key, without asking SQLite: a Bloom filter
 * per bucket, kept in memory by a Partition's key store (src/partition/key-store.ts).
 *
 * A key is stored in the bucket of its kept copy's expiry, so a new copy has
 * to be looked for in every live bucket (about nine, src/stream/expiry-buckets.ts):
 * a 62-key call made ~560 primary-key probes, most of them for keys that are
 * new. With a filter per bucket a new key is usually known absent at once and
 * a held one is probed in the one bucket that has it; a call whose keys are
 * all new reads nothing.
 *
 * Never a false "absent": a filter is made only from a scan of its whole
 * bucket, and every key the Partition adds afterwards is added to it (a key
 * added to a bucket with no filter yet is in its scan). Keys forgotten or
 * rolled back stay in as false "maybe"s, which cost a probe, never a
 * decision. Pure: the scan is the caller's.
 */
import { Bloom, bloomHash as hashPair, type BloomHash } from "../lib/bloom";

/** Bits per key in a filter's first layer: ~0.3% false "maybe" at capacity; each later layer takes 2 more (about ×0.3 each), so that their sum stays near the first's. */
const BITS_PER_KEY = 12;
const MIN_CAPACITY = 1_024;

/** A bucket's filter: layers of doubling capacity, so that a bucket that keeps filling keeps its false-"maybe" rate. */
class BucketFilter {
  private layers: Bloom[];

  constructor(expected: number) {
    this.layers = [new Bloom(Math.max(MIN_CAPACITY, 2 * expected), BITS_PER_KEY)];
  }

  add(h: BloomHash): void {
    let top = this.layers[this.layers.length - 1];
    if (top.count >= top.capacity) this.layers.push((top = new Bloom(2 * top.capacity, BITS_PER_KEY + 2 * this.layers.length)));
    top.add(h);
  }

  has(h: BloomHash): boolean {
    return this.layers.some((l) => l.has(h));
  }

  get bytes(): number {
    return this.layers.reduce((n, l) => n + l.bits.byteLength, 0);
  }
}

/** The keys of a call that some live bucket may hold, and those buckets. */
export interface MaybeHeld {
  keys: string[];
  buckets: number[];
}

export class BucketFilters {
  private filters = new Map<number, BucketFilter>();

  /** `scan(b)`: every stored key of bucket b (read once per bucket per object, then kept up to date by add()). */
  constructor(private readonly scan: (bucket: number) => Iterable<string>) {}

  /** Of these stored keys, those some live bucket may hold, and the buckets to look in. */
  maybeHeld(keys: Iterable<string>, live: Iterable<number>): MaybeHeld {
    const filters: [number, BucketFilter][] = [];
    for (const b of live) filters.push([b, this.filterOf(b)]);
    const out: string[] = [];
    const buckets = new Set<number>();
    for (const k of keys) {
      const h = hashPair(k);
      let maybe = false;
      for (const [b, f] of filters) {
        if (f.has(h)) {
          buckets.add(b);
          maybe = true;
        }
      }
      if (maybe) out.push(k);
    }
    return { keys: out, buckets: [...buckets] };
  }

  /** Bucket b is new: it holds no key yet, so its filter needs no scan. */
  open(bucket: number): void {
    if (!this.filters.has(bucket)) this.filters.set(bucket, new BucketFilter(0));
  }

  /** A key the caller stored in bucket b (a bucket with no filter yet has it in its scan). */
  add(bucket: number, key: string): void {
    this.filters.get(bucket)?.add(hashPair(key));
  }

  /** The bucket is gone (forgotten whole). */
  drop(bucket: number): void {
    this.filters.delete(bucket);
  }

  /** Memory the filters take, in bytes. */
  get bytes(): number {
    let n = 0;
    for (const f of this.filters.values()) n += f.bytes;
    return n;
  }

  private filterOf(bucket: number): BucketFilter {
    let f = this.filters.get(bucket);
    if (!f) {
      const keys = [...this.scan(bucket)];
      f = new BucketFilter(keys.length);
      for (const k of keys) f.add(hashPair(k));
      this.filters.set(bucket, f);
    }
    return f;
  }
}

/**
 * Packed key state: many remembered keys in one byte string (a segment), so
 * that a micro-batch's keys cost one SQLite row, not one each (Cloudflare
 * bills rows written, not bytes). Pure: the rows are the Partition's
 * (src/partition/key-store.ts).
 *
 * A segment holds two tables, each sorted by key so that one key is found
 * by binary search without decoding the rest:
 * - kept: the keys it remembers, with their expiry, event time, digest,
 *   batch number and the copies dropped against them when it was written;
 * - drops: copies dropped against keys kept by an earlier segment of the
 *   same bucket (key, that key's batch number, count).
 *
 * Each column is fixed-width per table, as narrow as its values allow:
 * a hashed key with an expiry is ~11 bytes (8 of key, 2–3 of expiry within
 * its bucket, ~1 of batch number; + 8 with a content digest), a text key its
 * UTF-8 length + ~5 (its offset, expiry, number; a column whose values are
 * all one, such as the event time's lag behind the expiry, takes none).
 */
import { compareBytes, readBig, readUint, widthOf, Writer, Reader } from "../lib/packed-bytes";
import { int64Decimal } from "./content";

/** A remembered key as a segment holds it. */
export interface KeyEntry {
  /** the stored key: its text, or its 64-bit hash as a signed decimal (src/partition/layout.ts) */
  key: string;
  /** its expiry bucket (stored form); a sealed segment's entries share their row's */
  b: number;
  /** its expiry's offset in the bucket, ms (null: never expires) */
  e: number | null;
  /** the kept copy's event time as stored (src/partition/layout.ts: its lag behind the expiry where it expires; null: none) */
  t: number | null;
  /** the kept copy's content digest (signed 64-bit decimal; null: none) */
  d: string | null;
  /** the number of the batch that kept it (null: none recorded) */
  n: number | null;
  /** copies dropped against it */
  dropped: number;
}

/** Copies dropped against a key kept elsewhere: the key, its kept copy's batch number and bucket, the count. */
export interface DropEntry {
  key: string;
  b: number;
  n: number | null;
  dropped: number;
}

const VERSION = 1;
const F_HASHED = 1;
const F_BUCKETS = 2;
const F_E = 4;
const F_T = 8;
const F_D = 16;
const F_D_NULLS = 32;
const F_N = 64;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A stored key's bytes, in the order keys are listed: a hash as 8 bytes big-endian (its unsigned order), text as UTF-8. */
export function keyBytes(hashed: boolean, key: string): Uint8Array {
  if (!hashed) return encoder.encode(key);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(key)));
  return out;
}

/** The key bytes an entry was read with (entry()), so that merging a segment again need not encode its keys again. */
const readWith = new WeakMap<KeyEntry, Uint8Array>();

/** An entry's key bytes: the ones it was read with, or encoded now. */
export const entryKeyBytes = (hashed: boolean, e: KeyEntry): Uint8Array => readWith.get(e) ?? keyBytes(hashed, e.key);

/** A column of optional numbers stored as value − base + 1 (0: null) in a fixed width. */
interface NumberColumn {
  base: number;
  width: number;
  at: number;
}

/** A column's base and width; width 0: every value is the base (none null), so the column takes no byte per entry. */
function columnOf(values: (number | null)[]): { base: number; width: number } {
  let lo = Infinity;
  let hi = -Infinity;
  let nulls = false;
  for (const v of values)
    if (v === null) nulls = true;
    else (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
  if (lo === Infinity) return { base: 0, width: 0 };
  if (lo === hi && !nulls) return { base: lo, width: 0 };
  return { base: lo, width: widthOf(hi - lo + 1) };
}

/**
 * One sorted table: entries (kept keys, or drops with only key, b, n and a
 * count) in key order. A key appears at most once (the caller merges).
 */
function writeTable(w: Writer, hashed: boolean, withBuckets: boolean, rows: readonly KeyEntry[]): void {
  // Rows merged from a segment come in key order with their bytes: the sort (a merge of runs) and the bytes cost little.
  const keyed = rows.map((r) => ({ r, k: entryKeyBytes(hashed, r) })).sort((x, y) => compareBytes(x.k, 0, x.k.length, y.k, 0, y.k.length));
  const es = keyed.map(({ r }) => r.e);
  const ts = keyed.map(({ r }) => r.t);
  const ns = keyed.map(({ r }) => r.n);
  const bs = keyed.map(({ r }) => r.b);
  const digests = keyed.map(({ r }) => r.d);
  const hasE = es.some((v) => v !== null);
  const hasT = ts.some((v) => v !== null);
  const hasN = ns.some((v) => v !== null);
  const hasD = digests.some((v) => v !== null);
  const dNulls = hasD && digests.some((v) => v === null);
  const flags =
    (hashed ? F_HASHED : 0) |
    (withBuckets ? F_BUCKETS : 0) |
    (hasE ? F_E : 0) |
    (hasT ? F_T : 0) |
    (hasD ? F_D : 0) |
    (dNulls ? F_D_NULLS : 0) |
    (hasN ? F_N : 0);
  w.u8(VERSION);
  w.u8(flags);
  w.varint(keyed.length);
  const cols: [boolean, (number | null)[]][] = [
    [withBuckets, bs],
    [hasE, es],
    [hasT, ts],
    [hasN, ns],
  ];
  const shapes = cols.map(([present, values]) => (present ? columnOf(values) : { base: 0, width: 0 }));
  cols.forEach(([present], i) => {
    if (!present) return;
    w.f64(shapes[i].base);
    w.u8(shapes[i].width);
  });
  if (hashed) for (const { k } of keyed) w.bytes(k);
  else {
    let offset = 0;
    const total = keyed.reduce((n, { k }) => n + k.length, 0);
    w.varint(total);
    const ow = Math.max(1, widthOf(total));
    for (const { k } of keyed) w.uint(offset, ow), (offset += k.length);
    for (const { k } of keyed) w.bytes(k);
  }
  cols.forEach(([present, values], i) => {
    if (!present) return;
    const { base, width } = shapes[i];
    for (const v of values) w.uint(v === null ? 0 : v - base + 1, width);
  });
  if (hasD) {
    if (dNulls) {
      const bits = new Uint8Array(Math.ceil(keyed.length / 8));
      digests.forEach((d, i) => d !== null && (bits[i >> 3] |= 1 << (i & 7)));
      w.bytes(bits);
    }
    const eight = new Uint8Array(8);
    const view = new DataView(eight.buffer);
    for (const d of digests) {
      view.setBigUint64(0, d === null ? 0n : BigInt.asUintN(64, BigInt(d)));
      w.bytes(eight);
    }
  }
  const dropped = keyed.flatMap(({ r }, i) => (r.dropped > 0 ? [[i, r.dropped]] : []));
  w.varint(dropped.length);
  for (const [i, n] of dropped) w.varint(i), w.varint(n);
}

/** A table read in place: a key is found by binary search, an entry decoded alone. */
export class SegmentTable {
  readonly count: number;
  readonly hashed: boolean;
  private readonly flags: number;
  private readonly cols: (NumberColumn | null)[];
  private readonly keysAt: number;
  private readonly offsetsAt: number;
  private readonly textAt: number;
  private readonly textLength: number;
  /** bytes per text key's offset */
  private readonly offsetWidth: number;
  private readonly dNullsAt: number;
  private readonly dAt: number;
  private readonly dropped = new Map<number, number>();
  /** where the table ends in its buffer */
  readonly end: number;

  constructor(
    private readonly buf: Uint8Array,
    at: number,
  ) {
    const r = new Reader(buf, at);
    if (r.u8() !== VERSION) throw new Error("key segment: unknown version");
    this.flags = r.u8();
    this.hashed = (this.flags & F_HASHED) !== 0;
    this.count = r.varint();
    this.cols = [F_BUCKETS, F_E, F_T, F_N].map((f) => {
      if ((this.flags & f) === 0) return null;
      const base = r.f64();
      return { base, width: r.u8(), at: 0 };
    });
    if (this.hashed) {
      this.keysAt = r.at;
      this.offsetsAt = this.textAt = this.textLength = this.offsetWidth = 0;
      r.at += 8 * this.count;
    } else {
      this.textLength = r.varint();
      this.offsetWidth = Math.max(1, widthOf(this.textLength));
      this.offsetsAt = r.at;
      this.textAt = r.at + this.offsetWidth * this.count;
      this.keysAt = 0;
      r.at = this.textAt + this.textLength;
    }
    for (const c of this.cols) {
      if (!c) continue;
      c.at = r.at;
      r.at += c.width * this.count;
    }
    this.dNullsAt = this.flags & F_D_NULLS ? r.at : -1;
    if (this.flags & F_D_NULLS) r.at += Math.ceil(this.count / 8);
    this.dAt = this.flags & F_D ? r.at : -1;
    if (this.flags & F_D) r.at += 8 * this.count;
    const n = r.varint();
    for (let i = 0; i < n; i++) this.dropped.set(r.varint(), r.varint());
    this.end = r.at;
  }

  private keyRange(i: number): [number, number] {
    if (this.hashed) return [this.keysAt + 8 * i, 8];
    const w = this.offsetWidth;
    const from = readUint(this.buf, this.offsetsAt + w * i, w);
    const to = i + 1 < this.count ? readUint(this.buf, this.offsetsAt + w * (i + 1), w) : this.textLength;
    return [this.textAt + from, to - from];
  }

  /** The position of a key (its bytes: keyBytes()), or −1. */
  indexOf(key: Uint8Array): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const [at, len] = this.keyRange(mid);
      const c = compareBytes(this.buf, at, len, key, 0, key.length);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The first position whose key is after `key` (bytes), for listing in key order. */
  after(key: Uint8Array): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const [at, len] = this.keyRange(mid);
      if (compareBytes(this.buf, at, len, key, 0, key.length) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The key at position i, as stored. */
  keyAt(i: number): string {
    const [at, len] = this.keyRange(i);
    if (!this.hashed) return decoder.decode(this.buf.subarray(at, at + len));
    return int64Decimal(readBig(this.buf, at, 0), readBig(this.buf, at, 4));
  }

  /** The key's bytes at position i (to compare, or to list in order). */
  keyBytesAt(i: number): Uint8Array {
    const [at, len] = this.keyRange(i);
    return this.buf.subarray(at, at + len);
  }

  private num(c: NumberColumn | null, i: number): number | null {
    if (!c) return null;
    if (c.width === 0) return c.base;
    const v = readUint(this.buf, c.at + c.width * i, c.width);
    return v === 0 ? null : v - 1 + c.base;
  }

  /** The entry at position i; `bucket`: the segment's (tables without a bucket column). */
  entry(i: number, bucket = 0): KeyEntry {
    let d: string | null = null;
    if (this.dAt >= 0 && (this.dNullsAt < 0 || (this.buf[this.dNullsAt + (i >> 3)] & (1 << (i & 7))) !== 0)) {
      d = int64Decimal(readBig(this.buf, this.dAt + 8 * i, 0), readBig(this.buf, this.dAt + 8 * i, 4));
    }
    const entry: KeyEntry = {
      key: this.keyAt(i),
      b: this.num(this.cols[0], i) ?? bucket,
      e: this.num(this.cols[1], i),
      t: this.num(this.cols[2], i),
      d,
      n: this.num(this.cols[3], i),
      dropped: this.dropped.get(i) ?? 0,
    };
    readWith.set(entry, this.keyBytesAt(i));
    return entry;
  }

  /** Just the expiry offset at position i (eviction counts these). */
  expiryAt(i: number): number | null {
    return this.num(this.cols[1], i);
  }

  *entries(bucket = 0): IterableIterator<KeyEntry> {
    for (let i = 0; i < this.count; i++) yield this.entry(i, bucket);
  }
}

/** A segment: its kept keys and its drops (entries' b: the row's bucket, or per entry with `withBuckets`). */
export function encodeSegment(hashed: boolean, kept: readonly KeyEntry[], drops: readonly DropEntry[], withBuckets = false): Uint8Array {
  const w = new Writer();
  writeTable(w, hashed, withBuckets, kept);
  writeTable(
    w,
    hashed,
    withBuckets,
    drops.map((x) => ({ key: x.key, b: x.b, e: null, t: null, d: null, n: x.n, dropped: x.dropped })),
  );
  return w.done();
}

/** A segment read in place. */
export class Segment {
  readonly kept: SegmentTable;
  readonly drops: SegmentTable;
  /** where it ends in its buffer (segments can follow one another: the open one's chunks) */
  readonly end: number;

  constructor(buf: Uint8Array, at = 0) {
    this.kept = new SegmentTable(buf, at);
    this.drops = new SegmentTable(buf, this.kept.end);
    this.end = this.drops.end;
  }

  /** The drops of a table as DropEntry values. */
  static dropsOf(t: SegmentTable, bucket = 0): DropEntry[] {
    return [...t.entries(bucket)].map((x) => ({ key: x.key, b: x.b, n: x.n, dropped: x.dropped }));
  }
}

/** Segments written one after another in one buffer (the open segment's chunks), read in order. */
export function* segmentsIn(buf: Uint8Array): IterableIterator<Segment> {
  let at = 0;
  while (at < buf.length) {
    const s = new Segment(buf, at);
    at = s.end;
    yield s;
  }
}

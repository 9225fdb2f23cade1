/**
 * One table of a key segment read in place (the format: ./key-segment.ts,
 * ./segment-format.ts): a key found by binary search, within its first
 * byte's range under a compact hashed table's directory; an entry decoded
 * alone. Pure.
 */
import { compareBytes, readBig, readUint, widthOf, Reader } from "../lib/packed-bytes";
import { int64Decimal } from "./content";
import { F_BUCKETS, F_COMPACT, F_D, F_D_NULLS, F_E, F_HASHED, F_N, F_T, KEY_BLOCK, readWith, VERSION, VERSION_64, type KeyEntry } from "./segment-format";

const decoder = new TextDecoder();

/** A column of optional numbers stored as value − base + 1 (0: null) in a fixed width. */
interface NumberColumn {
  base: number;
  width: number;
  at: number;
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
  /** F_COMPACT: text keys' lengths (and their blocks' offsets at offsetsAt), or hashed keys' first-byte directory */
  private readonly compact: boolean;
  private readonly lengthsAt: number;
  private readonly lengthWidth: number;
  /** a compact hashed table's directory: firsts[t] is the first key whose first byte is t or more (firsts[256]: the count) */
  private readonly firsts: Uint32Array | null;
  private readonly dNullsAt: number;
  private readonly dAt: number;
  /** bytes per digest: 4 (little-endian, as the other columns), or 8 in a version 1 table (big-endian; its low 32 bits are read) */
  private readonly dWidth: number;
  private readonly dropped = new Map<number, number>();
  /** where the table ends in its buffer */
  readonly end: number;

  constructor(
    private readonly buf: Uint8Array,
    at: number,
  ) {
    const r = new Reader(buf, at);
    const version = r.u8();
    if (version !== VERSION && version !== VERSION_64) throw new Error("key segment: unknown version");
    this.dWidth = version === VERSION ? 4 : 8;
    this.flags = r.u8();
    this.hashed = (this.flags & F_HASHED) !== 0;
    this.count = r.varint();
    this.cols = [F_BUCKETS, F_E, F_T, F_N].map((f) => {
      if ((this.flags & f) === 0) return null;
      const base = r.f64();
      return { base, width: r.u8(), at: 0 };
    });
    this.compact = (this.flags & F_COMPACT) !== 0;
    this.lengthsAt = this.lengthWidth = 0;
    this.firsts = null;
    if (this.hashed) {
      this.offsetsAt = this.textAt = this.textLength = this.offsetWidth = 0;
      if (this.compact) {
        const cw = r.u8();
        const firsts = new Uint32Array(257);
        for (let t = 0; t < 256; t++) firsts[t + 1] = firsts[t] + readUint(buf, r.at + cw * t, cw);
        this.firsts = firsts;
        r.at += 256 * cw;
      }
      this.keysAt = r.at;
      r.at += (this.compact ? 7 : 8) * this.count;
    } else {
      this.textLength = r.varint();
      this.offsetWidth = Math.max(1, widthOf(this.textLength));
      if (this.compact) this.lengthWidth = r.u8();
      this.offsetsAt = r.at;
      const offsets = this.compact ? Math.ceil(this.count / KEY_BLOCK) : this.count;
      this.lengthsAt = this.offsetsAt + this.offsetWidth * offsets;
      this.textAt = this.lengthsAt + this.lengthWidth * (this.compact ? this.count : 0);
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
    if (this.flags & F_D) r.at += this.dWidth * this.count;
    const n = r.varint();
    for (let i = 0; i < n; i++) this.dropped.set(r.varint(), r.varint());
    this.end = r.at;
  }

  /** Where key i's stored bytes are, and how many (a compact hashed key's 7 after its first, which the directory holds). */
  private keyRange(i: number): [number, number] {
    if (this.hashed) return this.compact ? [this.keysAt + 7 * i, 7] : [this.keysAt + 8 * i, 8];
    const w = this.offsetWidth;
    if (this.compact) {
      const lw = this.lengthWidth;
      const first = i - (i % KEY_BLOCK);
      let from = readUint(this.buf, this.offsetsAt + w * (first / KEY_BLOCK), w);
      for (let j = first; j < i; j++) from += readUint(this.buf, this.lengthsAt + lw * j, lw);
      return [this.textAt + from, readUint(this.buf, this.lengthsAt + lw * i, lw)];
    }
    const from = readUint(this.buf, this.offsetsAt + w * i, w);
    const to = i + 1 < this.count ? readUint(this.buf, this.offsetsAt + w * (i + 1), w) : this.textLength;
    return [this.textAt + from, to - from];
  }

  /** The directory's entry t: the first key whose first byte is t or more. */
  private firstWith(t: number): number {
    return this.firsts![t];
  }

  /** The positions a search for `key` looks in, and how much of the key it compares (all but a compact hashed key's first byte). */
  private searchRange(key: Uint8Array): [number, number, number] {
    if (!(this.hashed && this.compact) || key.length === 0) return [0, this.count, 0]; // (the empty key is before every key)
    return [this.firstWith(key[0]), this.firstWith(key[0] + 1), 1];
  }

  /** The position of a key (its bytes: keyBytes()), or −1. */
  indexOf(key: Uint8Array): number {
    const [from, to, skip] = this.searchRange(key);
    let lo = from;
    let hi = to - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const [at, len] = this.keyRange(mid);
      const c = compareBytes(this.buf, at, len, key, skip, key.length - skip);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The first position whose key is after `key` (bytes), for listing in key order. */
  after(key: Uint8Array): number {
    let [lo, hi, skip] = this.searchRange(key);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const [at, len] = this.keyRange(mid);
      if (compareBytes(this.buf, at, len, key, skip, key.length - skip) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The key at position i, as stored. */
  keyAt(i: number): string {
    if (!this.hashed) {
      const [at, len] = this.keyRange(i);
      return decoder.decode(this.buf.subarray(at, at + len));
    }
    const k = this.keyBytesAt(i);
    return int64Decimal(readBig(k, 0, 0), readBig(k, 0, 4));
  }

  /** The key's bytes at position i (to compare, or to list in order). */
  keyBytesAt(i: number): Uint8Array {
    const [at, len] = this.keyRange(i);
    if (!(this.hashed && this.compact)) return this.buf.subarray(at, at + len);
    // The first byte is the directory's: the last t whose first key is at or before i.
    let lo = 0;
    let hi = 255;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.firstWith(mid) <= i) lo = mid;
      else hi = mid - 1;
    }
    const out = new Uint8Array(8);
    out[0] = lo;
    out.set(this.buf.subarray(at, at + 7), 1);
    return out;
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
      // Version 1 kept the 64 bits big-endian: their low 32 are its last four bytes.
      d = String(this.dWidth === 4 ? readUint(this.buf, this.dAt + 4 * i, 4) : readBig(this.buf, this.dAt + 8 * i, 4) >>> 0);
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

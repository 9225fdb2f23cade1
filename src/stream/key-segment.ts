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
 * a hashed key with an expiry is ~11 bytes (8 of key, or 7 under a
 * directory of first bytes; 2–3 of expiry within its bucket, ~1 of batch
 * number; + 4 with a content digest), a text key its UTF-8 length + ~4 (its
 * length, expiry, number; a column whose values are all one, such as the
 * event time's lag behind the expiry, takes none).
 *
 * This file writes; ./segment-table.ts reads a table in place, and
 * ./segment-format.ts holds what both know. Version 2 keeps 32 bits of a
 * content digest (digestWord) and the compact keys; version 1 segments,
 * which kept 64 bits and an offset per key, are still read.
 */
import { compareBytes, widthOf, Writer } from "../lib/packed-bytes";
import { digestWord } from "./content";
import {
  DIRECTORY_FROM,
  entryKeyBytes,
  F_BUCKETS,
  F_COMPACT,
  F_D,
  F_D_NULLS,
  F_E,
  F_HASHED,
  F_N,
  F_T,
  KEY_BLOCK,
  VERSION,
  type DropEntry,
  type KeyEntry,
} from "./segment-format";
import { SegmentTable } from "./segment-table";

export { compareKeyBytes, entryKeyBytes, keyBytes, type DropEntry, type KeyEntry } from "./segment-format";
export { SegmentTable } from "./segment-table";

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
  const textTotal = hashed ? 0 : keyed.reduce((n, { k }) => n + k.length, 0);
  const lengthWidth = hashed ? 0 : Math.max(1, widthOf(keyed.reduce((m, { k }) => Math.max(m, k.length), 0)));
  // Compact keys where they are smaller: a directory for many hashed keys, lengths where an offset takes more bytes than a length.
  const compact = hashed ? keyed.length >= DIRECTORY_FROM : Math.max(1, widthOf(textTotal)) > lengthWidth;
  const flags =
    (hashed ? F_HASHED : 0) |
    (withBuckets ? F_BUCKETS : 0) |
    (hasE ? F_E : 0) |
    (hasT ? F_T : 0) |
    (hasD ? F_D : 0) |
    (dNulls ? F_D_NULLS : 0) |
    (hasN ? F_N : 0) |
    (compact ? F_COMPACT : 0);
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
  if (hashed && compact) {
    // The directory: how many keys have each first byte, in a width of their most (one byte below 256 a byte value).
    const counts = new Array<number>(256).fill(0);
    for (const { k } of keyed) counts[k[0]]++;
    const cw = Math.max(1, widthOf(Math.max(...counts)));
    w.u8(cw);
    for (const n of counts) w.uint(n, cw);
    for (const { k } of keyed) w.bytes(k.subarray(1));
  } else if (hashed) for (const { k } of keyed) w.bytes(k);
  else {
    w.varint(textTotal);
    const ow = Math.max(1, widthOf(textTotal));
    if (compact) {
      w.u8(lengthWidth);
      let offset = 0;
      keyed.forEach(({ k }, i) => {
        if (i % KEY_BLOCK === 0) w.uint(offset, ow);
        offset += k.length;
      });
      for (const { k } of keyed) w.uint(k.length, lengthWidth);
    } else {
      let offset = 0;
      for (const { k } of keyed) w.uint(offset, ow), (offset += k.length);
    }
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
    for (const d of digests) w.uint(d === null ? 0 : digestWord(d), 4);
  }
  const dropped = keyed.flatMap(({ r }, i) => (r.dropped > 0 ? [[i, r.dropped]] : []));
  w.varint(dropped.length);
  for (const [i, n] of dropped) w.varint(i), w.varint(n);
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

/**
 * The statements on the `segments` table: a row per sealed key segment
 * (src/stream/key-segment.ts) with its bucket, its kept-key count and its
 * bytes. A rowid table with no
 * second index: a segment written is one row written, and the scans by
 * bucket read only each row's first columns (the blobs come last, on their
 * own pages). Pure SQL helpers over a Partition's storage.
 */
import { Segment } from "../stream/key-segment";
import { segmentFilter, type IndexedSegment } from "../stream/segment-index";

export const SEGMENTS_TABLE = "CREATE TABLE segments (s INTEGER PRIMARY KEY, b INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL)";

/** A blob as SQLite takes it. */
export const blobOf = (bytes: Uint8Array): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

/** Every segment's index entry, its filter made from its keys (src/stream/segment-index.ts): a row at a time, so that only one segment's bytes are held at once. */
export function readIndex(sql: SqlStorage, hashed: boolean): IndexedSegment[] {
  const out: IndexedSegment[] = [];
  for (const r of sql.exec<{ s: number; b: number; n: number; data: ArrayBuffer }>("SELECT s, b, n, data FROM segments")) {
    const kept = new Segment(new Uint8Array(r.data)).kept;
    const keys = (function* () {
      for (let i = 0; i < kept.count; i++) yield kept.keyBytesAt(i);
    })();
    out.push({ s: r.s, b: r.b, n: r.n, bytes: r.data.byteLength, filter: segmentFilter(hashed, keys, kept.count) });
  }
  return out;
}

/** The data of these segments, by number (one statement). */
export function readData(sql: SqlStorage, segments: Iterable<number>): Map<number, Uint8Array> {
  const list = [...segments];
  if (list.length === 0) return new Map();
  const rows = sql
    .exec<{ s: number; data: ArrayBuffer }>("SELECT s, data FROM segments WHERE s IN (SELECT value FROM json_each(?))", JSON.stringify(list))
    .toArray();
  return new Map(rows.map((r) => [r.s, new Uint8Array(r.data)]));
}

/** The data of every segment of a bucket (a receipt's drop counts). */
export function readBucket(sql: SqlStorage, b: number): Uint8Array[] {
  return sql
    .exec<{ data: ArrayBuffer }>("SELECT data FROM segments WHERE b = ?", b)
    .toArray()
    .map((r) => new Uint8Array(r.data));
}

/** Every segment's data, with its bucket (the state reader's listing). */
export function readAll(sql: SqlStorage): { b: number; data: Uint8Array }[] {
  return sql
    .exec<{ b: number; data: ArrayBuffer }>("SELECT b, data FROM segments")
    .toArray()
    .map((r) => ({ b: r.b, data: new Uint8Array(r.data) }));
}

/** Writes a segment (a new number, or one rewritten in place). */
export function writeSegment(sql: SqlStorage, s: number, b: number, n: number, data: Uint8Array): void {
  sql.exec("INSERT OR REPLACE INTO segments (s, b, n, data) VALUES (?, ?, ?, ?)", s, b, n, blobOf(data));
}

/** Deletes the segments of these buckets whole; returns how many went. */
export function deleteBuckets(sql: SqlStorage, buckets: readonly number[]): number {
  if (buckets.length === 0) return 0;
  return sql.exec("DELETE FROM segments WHERE b IN (SELECT value FROM json_each(?)) RETURNING 1", JSON.stringify(buckets)).toArray().length;
}

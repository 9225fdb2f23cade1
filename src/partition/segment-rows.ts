/**
 * The statements on the `segments` table: a row per sealed key segment
 * (src/stream/key-segment.ts) with its bucket, its kept-key count, its
 * filter (src/stream/segment-index.ts) and its bytes. A rowid table with no
 * second index: a segment written is one row written, and the scans by
 * bucket read only each row's first columns (the blobs come last, on their
 * own pages). Pure SQL helpers over a Partition's storage.
 */
import { Bloom } from "../lib/bloom";
import type { IndexedSegment } from "../stream/segment-index";

export const SEGMENTS_TABLE = "CREATE TABLE segments (s INTEGER PRIMARY KEY, b INTEGER NOT NULL, n INTEGER NOT NULL, filter BLOB NOT NULL, data BLOB NOT NULL)";

/** A blob as SQLite takes it. */
export const blobOf = (bytes: Uint8Array): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

/** Every segment's index entry (its filter; not its data). */
export function readIndex(sql: SqlStorage): IndexedSegment[] {
  return sql
    .exec<{ s: number; b: number; n: number; filter: ArrayBuffer; size: number }>("SELECT s, b, n, filter, length(data) AS size FROM segments")
    .toArray()
    .map((r) => ({ s: r.s, b: r.b, n: r.n, bytes: r.size, filter: Bloom.fromBytes(new Uint8Array(r.filter), r.n) }));
}

/** The data of these segments, by number (one statement). */
export function readData(sql: SqlStorage, segments: Iterable<number>): Map<number, Uint8Array> {
  const list = [...segments];
  if (list.length === 0) return new Map();
  const rows = sql.exec<{ s: number; data: ArrayBuffer }>("SELECT s, data FROM segments WHERE s IN (SELECT value FROM json_each(?))", JSON.stringify(list)).toArray();
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
export function writeSegment(sql: SqlStorage, s: number, b: number, n: number, filter: Bloom, data: Uint8Array): void {
  sql.exec("INSERT OR REPLACE INTO segments (s, b, n, filter, data) VALUES (?, ?, ?, ?, ?)", s, b, n, blobOf(filter.toBytes()), blobOf(data));
}

/** Deletes the segments of these buckets whole; returns how many went. */
export function deleteBuckets(sql: SqlStorage, buckets: readonly number[]): number {
  if (buckets.length === 0) return 0;
  return sql.exec("DELETE FROM segments WHERE b IN (SELECT value FROM json_each(?)) RETURNING 1", JSON.stringify(buckets)).toArray().length;
}

/**
 * The segments of the buckets a rescale's move and its read-through are
 * reading, kept between calls. A page of a bucket's keys, or a peek at one
 * key, needs every segment of its bucket (a key's drop counts can sit in any
 * of them): without this, moving a bucket of n keys in pages of 250 read the
 * bucket n ÷ 250 times, and every read-through of a key held there read it
 * once more. A partition being moved out of takes no new keys, so what is
 * kept stays right; still, every use first checks the bucket's rows (their
 * numbers and lengths, which reads no blob) and reads the bucket again if a
 * segment was written, rewritten or deleted since.
 */
import { Segment } from "../stream/key-segment";

/** At most this many bytes of segments kept (the least recently used bucket goes first); a bucket larger than this is read every time. */
export const BUCKET_CACHE_BYTES = 24 * 1024 * 1024;

interface Held {
  shape: string;
  bytes: number;
  segments: Segment[];
}

export class BucketCache {
  private readonly held = new Map<number, Held>();
  private bytes = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly capBytes = BUCKET_CACHE_BYTES,
  ) {}

  /** Every segment of stored bucket b. */
  segmentsOf(b: number): Segment[] {
    const rows = this.sql.exec<{ s: number; n: number }>("SELECT s, length(data) AS n FROM segments WHERE b = ? ORDER BY s", b).toArray();
    const shape = rows.map((r) => `${r.s}:${r.n}`).join(",");
    const had = this.held.get(b);
    if (had && had.shape === shape) {
      this.held.delete(b); // to the back: most recently used
      this.held.set(b, had);
      return had.segments;
    }
    if (had) this.drop(b);
    const segments = this.sql
      .exec<{ data: ArrayBuffer }>("SELECT data FROM segments WHERE b = ? ORDER BY s", b)
      .toArray()
      .map((r) => new Segment(new Uint8Array(r.data)));
    const bytes = rows.reduce((sum, r) => sum + r.n, 0);
    if (bytes <= this.capBytes) {
      for (const [old] of this.held) {
        if (this.bytes + bytes <= this.capBytes) break;
        this.drop(old);
      }
      this.held.set(b, { shape, bytes, segments });
      this.bytes += bytes;
    }
    return segments;
  }

  /** Nothing kept (a rollback, or the storage deleted). */
  forget(): void {
    this.held.clear();
    this.bytes = 0;
  }

  private drop(b: number): void {
    this.bytes -= this.held.get(b)?.bytes ?? 0;
    this.held.delete(b);
  }
}

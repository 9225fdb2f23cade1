/**
 * Eviction: the partition watermark goes up and the keys it expired go.
 * Buckets below the watermark's go whole: their segment rows are deleted,
 * a row per segment, never a row per key. The watermark's own bucket keeps
 * its rows until the watermark passes it; what it forgets is exact anyway:
 * an entry whose expiry the watermark has reached is no longer remembered
 * (KeyStore.read skips it), and the bucket's live expiries are held here in
 * memory, sorted (the front), so that the key count drops by exactly the
 * keys each step expires. The front is made again from the bucket's rows
 * after a restart.
 */
import { bucketAtWatermark } from "../stream/expiry-buckets";
import { Segment } from "../stream/key-segment";
import { isLive, type KeyStore } from "./key-store";
import { absoluteBucket, expiryOf, storedBucket, type Layout } from "./layout";
import { layoutOf, type PartitionMeta } from "./meta";
import { dieInStorageIfArmed } from "./midway-fault";
import { forgetReceipts, openChunk } from "./receipts";
import { deleteBuckets, readData } from "./segment-rows";

/** The watermark's bucket's live expiries, ascending. */
interface Front {
  b: number;
  expiries: number[];
}

export class Eviction {
  private front: Front | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly keys: KeyStore,
  ) {}

  /**
   * Sets the partition watermark to max(itself, `watermark`) and forgets
   * exactly the expired keys (`e <= wm`, the rule of isExpired() in
   * src/stream/dedup.ts). Runs only when the earliest expiry (a lower bound)
   * is due. Returns the keys removed; `meta` is updated, not saved.
   */
  evict(meta: PartitionMeta, watermark: number): number {
    const before = meta.watermark;
    meta.watermark = Math.max(meta.watermark, watermark);
    const l = layoutOf(meta);
    if (meta.next_expiry === null || meta.next_expiry > meta.watermark || !l || !l.width) return 0;
    const wm = meta.watermark;
    const at = storedBucket(l, bucketAtWatermark(wm, l.width));
    const gone = new Set(this.bucketsOf(meta, l).filter((b) => b < at));
    let removed = 0;
    for (const b of gone) removed += this.liveIn(meta, l, b, before);
    deleteBuckets(this.sql, [...gone]);
    if (gone.size > 0) dieInStorageIfArmed(meta.epoch, "partition-evict-midway"); // test builds only
    for (const b of gone) this.keys.segments(l).dropBucket(b);
    this.keys.dropOpen(meta, l, gone);
    if (this.front && this.front.b < at) this.front = undefined;
    const chunk = forgetReceipts(this.sql, meta.names ? openChunk(this.sql, meta.names) : null, at, wm);
    meta.names = chunk ? JSON.stringify(chunk) : null;
    if (absoluteBucket(l, at) * l.width <= wm) {
      this.front ??= { b: at, expiries: this.expiriesIn(meta, l, at, before) };
      const passed = upperBound(this.front.expiries, wm);
      this.front.expiries.splice(0, passed);
      removed += passed;
    }
    meta.rows -= removed;
    meta.next_expiry = this.earliestExpiry(meta, l, at);
    return removed;
  }

  /**
   * Bucket b (stored form) forgotten whole, its keys kept elsewhere now (a
   * rescale's mover, src/partition/key-moves.ts): its rows, its open
   * entries and its receipts go, and the count drops by its live keys.
   * Returns them; `meta` is updated, not saved.
   */
  forgetBucket(meta: PartitionMeta, l: Layout, b: number): number {
    const removed = this.liveIn(meta, l, b, meta.watermark);
    deleteBuckets(this.sql, [b]);
    this.keys.segments(l).dropBucket(b);
    this.keys.dropOpen(meta, l, new Set([b]));
    this.sql.exec("DELETE FROM receipts WHERE b = ?", b);
    if (this.front?.b === b) this.front = undefined;
    meta.rows -= removed;
    const at = l.width ? storedBucket(l, bucketAtWatermark(meta.watermark, l.width)) : 0;
    meta.next_expiry = l.width ? this.earliestExpiry(meta, l, at) : null;
    return removed;
  }

  /** A key the call added: into the front if it is in the front's bucket. */
  added(b: number, expiresAt: number): void {
    if (!this.front || this.front.b !== b) return;
    const e = this.front.expiries;
    e.splice(upperBound(e, expiresAt), 0, expiresAt);
  }

  /** Made again next time (after a rollback, a restart or a new incarnation). */
  forget(): void {
    this.front = undefined;
  }

  /** The buckets holding keys: in sealed segments or the open one. */
  private bucketsOf(meta: PartitionMeta, l: Layout): number[] {
    const bs = new Set(this.keys.segments(l).bucketList());
    const open = this.keys.openOf(meta);
    for (const e of open.kept.values()) bs.add(e.b);
    for (const d of open.drops.values()) bs.add(d.b);
    return [...bs];
  }

  /** Keys of bucket b still remembered at watermark wm (what its deletion removes from the count). */
  private liveIn(meta: PartitionMeta, l: Layout, b: number, wm: number): number {
    if (this.front?.b === b) return this.front.expiries.length;
    // A bucket that starts after wm, or one whose keys never expire, holds no expired entry: its count is the segments' and the open segment's.
    if (!l.width || absoluteBucket(l, b) * l.width > wm) {
      let n = 0;
      for (const seg of this.keys.segments(l).segmentsOf(b)) n += seg.n;
      for (const e of this.keys.openOf(meta).kept.values()) if (e.b === b) n++;
      return n;
    }
    return this.expiriesIn(meta, l, b, wm).length;
  }

  /** The expiries of bucket b's keys remembered at watermark wm, ascending. */
  private expiriesIn(meta: PartitionMeta, l: Layout, b: number, wm: number): number[] {
    const out: number[] = [];
    const data = readData(
      this.sql,
      this.keys
        .segments(l)
        .segmentsOf(b)
        .map((s) => s.s),
    );
    for (const bytes of data.values()) {
      const kept = new Segment(bytes).kept;
      for (let i = 0; i < kept.count; i++) {
        const e = kept.expiryAt(i);
        if (isLive(l, b, e, wm) && e !== null) out.push(expiryOf(l, b, e)!);
      }
    }
    for (const e of this.keys.openOf(meta).kept.values()) if (e.b === b && e.e !== null && isLive(l, b, e.e, wm)) out.push(expiryOf(l, b, e.e)!);
    return out.sort((x, y) => x - y);
  }

  /** Exact while the front holds keys; otherwise the start of the lowest bucket after it, a lower bound that costs no scan. */
  private earliestExpiry(meta: PartitionMeta, l: Layout, at: number): number | null {
    if (this.front?.b === at && this.front.expiries.length > 0) return this.front.expiries[0];
    const later = this.bucketsOf(meta, l).filter((b) => b > at || (b === at && this.front?.b !== at));
    return later.length === 0 ? null : absoluteBucket(l, Math.min(...later)) * l.width;
  }
}

/** How many of the sorted values are <= v. */
function upperBound(sorted: readonly number[], v: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

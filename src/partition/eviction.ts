/**
 * Eviction: the partition watermark goes up and the keys it expired go,
 * with their receipts. Buckets below the watermark's go whole, by range.
 * The watermark's own bucket is copied once into `front`, ordered by expiry,
 * so that each later step deletes just the keys it passes: the work is
 * proportional to the keys expired, with no per-key index.
 */
import { bucketAtWatermark } from "../stream/expiry-buckets";
import type { KeyStore } from "./key-store";
import { absoluteBucket, expirySql, storedBucket, type Layout } from "./layout";
import { layoutOf, type PartitionMeta } from "./meta";
import { forgetFrontReceipts, forgetReceipts, openChunk } from "./receipts";

export class Eviction {
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
    meta.watermark = Math.max(meta.watermark, watermark);
    const l = layoutOf(meta);
    if (meta.next_expiry === null || meta.next_expiry > meta.watermark || !l || !l.width) return 0;
    const wm = meta.watermark;
    const bucket = bucketAtWatermark(wm, l.width);
    const at = storedBucket(l, bucket);
    let removed = this.sql.exec("DELETE FROM keys WHERE b < ? RETURNING 1", at).toArray().length;
    const chunk = forgetReceipts(this.sql, meta.names ? openChunk(this.sql, meta.names) : null, at, wm);
    meta.names = chunk ? JSON.stringify(chunk) : null;
    this.keys.droppedBelow(at);
    if (meta.front_b !== null && meta.front_b !== at) {
      this.sql.exec("DELETE FROM front");
      meta.front_b = null;
    }
    if (this.keys.liveBuckets().has(at) && bucket * l.width <= wm) {
      if (meta.front_b === null) {
        // In front's own order: appending sorted rows is much faster than inserting them at random.
        this.sql.exec(`INSERT INTO front (e, k) SELECT ${expirySql(l)}, k FROM keys WHERE b = ? ORDER BY keys.e, k`, at);
        meta.front_b = at;
      }
      removed += this.sql.exec("DELETE FROM keys WHERE b = ? AND k IN (SELECT k FROM front WHERE e <= ?) RETURNING 1", at, wm).toArray().length;
      forgetFrontReceipts(this.sql, at, wm);
      this.sql.exec("DELETE FROM front WHERE e <= ?", wm);
    }
    meta.rows -= removed;
    meta.next_expiry = this.earliestExpiry(meta, l);
    return removed;
  }

  /** Exact while `front` holds keys; otherwise the start of the lowest bucket, a lower bound that costs no scan. */
  private earliestExpiry(meta: PartitionMeta, l: Layout): number | null {
    if (meta.front_b !== null) {
      const e = this.sql.exec<{ e: number | null }>("SELECT min(e) AS e FROM front").one().e;
      if (e !== null) return e;
    }
    const b = this.sql.exec<{ b: number | null }>("SELECT min(b) AS b FROM keys").one().b;
    return b === null ? null : absoluteBucket(l, b) * l.width;
  }
}

/**
 * A partition clusters its keys by expiry bucket, so that forgetting a whole
 * bucket is deleting its segment rows (src/partition/key-store.ts), never a
 * row per key. A bucket spans `width` ms of expiry; width 0 is the `global`
 * mode's single bucket that never expires.
 *
 * With width = delay / 8 a within-watermark partition holds about seventeen
 * live buckets (keys expire between wm and max T + delay, about 2 × delay
 * apart). The bucket the watermark is inside is the only one that holds
 * expired keys still stored (at most a width's worth, ~1/16 of the state);
 * they are not remembered (the key store checks each expiry) and go with
 * their bucket.
 */
import type { DedupSettings } from "./dedup";

/** Narrower buckets mean more segments per seal; wider ones, more expired keys kept on disk until their bucket goes (a partition that fixed its layout before keeps its width). */
export const MIN_BUCKET_WIDTH_MS = 1_000;

export function bucketWidthFor(settings: DedupSettings): number {
  if (settings.mode === "global" || !settings.hasEventTime) return 0;
  return Math.max(MIN_BUCKET_WIDTH_MS, Math.floor(settings.delay / 8));
}

export function bucketOf(expiresAt: number | null, width: number): number {
  return expiresAt === null || width === 0 ? 0 : Math.floor(expiresAt / width);
}

/**
 * The bucket the watermark is inside: every bucket below it has expired whole
 * (all its expiries are <= wm), and it may hold keys on both sides of wm.
 */
export function bucketAtWatermark(watermark: number, width: number): number {
  return Math.floor((watermark + 1) / width);
}

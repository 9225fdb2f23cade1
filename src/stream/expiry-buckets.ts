/**
 * Compact state keeps no per-key expiry index: a partition clusters its keys
 * by expiry bucket, `(bucket, key)`, so that forgetting a whole bucket is one
 * range delete and a key is found by probing the few buckets that can still
 * hold it. A bucket spans `width` ms of expiry; width 0 is the `global` mode's
 * single bucket that never expires.
 *
 * With width = delay / 4 a within-watermark partition holds about nine live
 * buckets (keys expire between wm and max T + delay, about 2 × delay apart);
 * the one bucket the watermark is inside is copied once, ordered by expiry,
 * so that eviction deletes exactly the keys due (src/partition/eviction.ts).
 */
import type { DedupSettings } from "./dedup";

/** Narrower buckets mean more probes per key for the same live span; wider ones, a bigger bucket to copy when the watermark enters it. */
export const MIN_BUCKET_WIDTH_MS = 60_000;

export function bucketWidthFor(settings: DedupSettings): number {
  if (settings.mode === "global" || !settings.hasEventTime) return 0;
  return Math.max(MIN_BUCKET_WIDTH_MS, Math.floor(settings.delay / 4));
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

/**
 * Which of an old partition's keys a move has handed out, by its cursor
 * (src/rescale/mover.ts): the new owners hold those, so the stream's state figure
 * counts them there and not at the old partition, which keeps them until
 * their bucket's last page is in. Pure.
 *
 * Buckets go in ascending order, and a bucket's keys in key order (the order
 * of their bytes, as segments sort them): handed out are the buckets up to
 * `after` (forgotten there by now) and those below the bucket under way, and
 * in that bucket the keys up to the page's last.
 */
import { compareKeyBytes, keyBytes } from "./key-segment";

/** Where a hand-out goes on: within `bucket`, after its key `key` (a bucket handed out a page at a time). */
export interface HandOutPage {
  bucket: number;
  key: string;
}

/** Where an old partition's move stands: the last bucket moved whole (stored form; null: none yet) and the page of the bucket under way (null: none). */
export interface HandedOut {
  after: number | null;
  page?: HandOutPage | null;
}

/** Whether the key `key` of stored bucket `bucket` (a text key) has been handed out. */
export function isHandedOut(cursor: HandedOut, bucket: number, key: string): boolean {
  if (cursor.after !== null && bucket <= cursor.after) return true;
  const page = cursor.page;
  if (!page) return false;
  if (bucket !== page.bucket) return bucket < page.bucket;
  return compareKeyBytes(keyBytes(false, key), keyBytes(false, page.key)) <= 0;
}

/** Whether a key of bucket `page.bucket`, as stored bytes, is at or before the page's last. */
export const upToPage = (page: HandOutPage, key: Uint8Array): boolean => compareKeyBytes(key, keyBytes(false, page.key)) <= 0;

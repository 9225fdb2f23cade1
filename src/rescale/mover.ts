/**
 * The steps of a partition move (DESIGN §12, online rescale) over the
 * partitions' RPC (src/partition/protocol.ts), without the Coordinator that
 * will run them: the handover at the switch, and the background move of an
 * old partition's keys, a bucket at a time, from a cursor the caller keeps.
 *
 * Every step can be taken again: a partition takes in keys it already has
 * as a no-op (its copy wins), forgets a bucket it no longer has as a no-op,
 * and unites decision entries it holds. So a move resumed from its last
 * kept cursor after a crash at any point moves every key once, loses none,
 * and a key is never without an owner: a bucket is forgotten where it was
 * only after its new owners have taken it in.
 */
import type { MovedKey, PartitionRpc } from "../partition/protocol";
import type { HandedOut } from "../stream/handed-out";
import type { DedupSettings } from "../stream/dedup";
import { ownerOf, routingKeyOf, successors } from "../stream/partition-map";

type Stub = DurableObjectStub<PartitionRpc>;

/** The two sets of a move: the old map's partitions and the new map's. */
export interface MoveSides {
  epoch: string;
  settings: DedupSettings;
  /** old map's partition count, and the new one's */
  from: number;
  to: number;
  old: (p: number) => Stub;
  next: (q: number) => Stub;
}

/** Where an old partition's move stands (src/stream/handed-out.ts), and whether none is left. */
export interface MoveCursor extends HandedOut {
  done: boolean;
}

export const START: MoveCursor = { after: null, done: false };

/** The switch: each old partition's decisions of micro-batches not yet committed go to each of its successors. */
export async function handOverDecisions(sides: MoveSides): Promise<void> {
  for (let p = 0; p < sides.from; p++) {
    const entries = await sides.old(p).handOutDecisions(sides.epoch);
    if (entries.length === 0) continue;
    await Promise.all(successors(p, sides.from, sides.to).map((q) => sides.next(q).takeDecisions(sides.epoch, entries)));
  }
}

/**
 * Up to `pages` pages (of at most `pageKeys` keys; 0: a bucket a page) of
 * old partition p moved from `cursor`: each handed out (what expired at
 * `watermark`, the stream's, evicted there first) and taken in by the keys'
 * new owners (at `watermark` too, which carries over); a
 * bucket is forgotten at p once its last page is in. `onPage` is called
 * with the cursor after each page, for the caller to keep. A text
 * partition only (a hashed one keeps its keys until they expire).
 */
export async function moveBuckets(
  sides: MoveSides,
  p: number,
  watermark: number,
  cursor: MoveCursor,
  pages: number,
  onPage: (cursor: MoveCursor, taken: number) => Promise<void> | void,
  pageKeys = 0,
): Promise<MoveCursor> {
  let at = cursor;
  for (let i = 0; i < pages && !at.done; i++) {
    const next = await sides.old(p).handOut(sides.epoch, at.after, at.page ?? null, pageKeys, watermark);
    if (next && "hashed" in next) throw new Error(`old partition ${p} is hashed: its keys can't be routed anew, only read through until they expire`);
    if (!next) {
      at = { after: at.after, done: true };
      await onPage(at, 0);
      break;
    }
    const byOwner = new Map<number, MovedKey[]>();
    for (const m of next.keys) {
      const q = ownerOf(routingKeyOf(m.key, m.eventTime, sides.settings.mode), { partitions: sides.to });
      (byOwner.get(q) ?? byOwner.set(q, []).get(q)!).push(m);
    }
    const taken = await Promise.all([...byOwner].map(([q, keys]) => sides.next(q).takeIn(sides.epoch, sides.settings, watermark, keys)));
    if (next.last) {
      await sides.old(p).forgetBucket(sides.epoch, next.bucket);
      at = { after: next.bucket, page: null, done: false };
    } else at = { after: at.after, page: { bucket: next.bucket, key: next.keys[next.keys.length - 1].key }, done: false };
    await onPage(
      at,
      taken.reduce((n, t) => n + t.taken, 0),
    );
  }
  return at;
}

/**
 * Keys leaving and joining a partition (DESIGN §12, online rescale): the
 * bottom of a move. A partition hands out its remembered keys a bucket at a
 * time, each whole (expiry, event time, digest, its batch's name, every copy
 * dropped against it, its conflicts), and takes such keys in as if a call had
 * kept them, except those it already remembers (its own copy wins): taking
 * the same keys again, after a crash, changes nothing.
 *
 * Handing out needs the key's text to route it anew, so only a text
 * partition hands out; a hashed one (its keys are hashes under its own
 * secret) keeps them until they expire. Taking in works for either.
 */
import { compareKeyBytes as compare, keyBytes, type KeyEntry, type SegmentTable } from "../stream/key-segment";
import { isLive, type KeyStore } from "./key-store";
import { absoluteBucket, bucketFor, heldOf, storedKey, type Held, type Layout } from "./layout";
import { layoutOf, type PartitionMeta } from "./meta";
import type { HandOut, HandOutPage, MoveFigures, MovedKey } from "./protocol";
import type { DedupSettings } from "../stream/dedup";
import { fixLayoutFor } from "./judging";
import type { InheritedMarks } from "./inherited-marks";
import { upToPage } from "../stream/handed-out";
import { openChunk, resolveNames } from "./receipts";
import { nameBatch, type NameChunk } from "./batch-names";

/** The stored buckets holding keys, ascending (sealed segments' and the open segment's). */
function bucketsOf(keys: KeyStore, meta: PartitionMeta, l: Layout): number[] {
  const bs = new Set<number>(keys.segments(l).bucketList());
  for (const e of keys.openOf(meta).kept.values()) bs.add(e.b);
  return [...bs].sort((a, b) => a - b);
}

/**
 * These remembered keys of stored bucket b, each whole: `only` maps each
 * stored key to the state key it moves under (a hashed key's text is not
 * stored, so the caller names it).
 */
function wholeKeysOf(sql: SqlStorage, keys: KeyStore, meta: PartitionMeta, l: Layout, b: number, only: ReadonlyMap<string, string>): MovedKey[] {
  const wm = meta.watermark;
  const open = keys.openOf(meta);
  const wanted = (key: string) => only.has(key);
  const kept = new Map<string, KeyEntry>();
  const dropped = new Map<string, number>();
  const countDrop = (key: string, n: number | null, count: number) => {
    if (wanted(key)) dropped.set(`${n} ${key}`, (dropped.get(`${n} ${key}`) ?? 0) + count);
  };
  for (const seg of keys.buckets.segmentsOf(b)) {
    // Given keys are looked up (each table is sorted), not the bucket decoded: a page of a large bucket costs its keys.
    for (const key of only.keys()) {
      const bytes = keyBytes(!!l.hashed, key);
      const i = seg.kept.indexOf(bytes);
      if (i >= 0) {
        const e = seg.kept.entry(i, b);
        if (isLive(l, b, e.e, wm)) kept.set(e.key, e);
      }
      for (const j of sameKey(seg.drops, bytes)) {
        const d = seg.drops.entry(j, b);
        countDrop(d.key, d.n, d.dropped);
      }
    }
  }
  for (const e of open.kept.values()) if (e.b === b && wanted(e.key) && isLive(l, b, e.e, wm)) kept.set(e.key, e);
  for (const d of open.drops.values()) if (d.b === b) countDrop(d.key, d.n, d.dropped);
  if (kept.size === 0) return [];
  const names = resolveNames(
    sql,
    openChunk(sql, meta.names),
    [...kept.values()].flatMap((e) => (e.n === null ? [] : [e.n])),
  );
  // A hashed key is a 64-bit INTEGER there: read as text, exactly.
  const conflicts = new Map(
    sql
      .exec<{ k: string; c: number }>("SELECT CAST(k AS TEXT) AS k, conflicts AS c FROM receipts WHERE b = ?", b)
      .toArray()
      .map((r) => [r.k, r.c]),
  );
  return [...kept.values()].map((e) => {
    const h = heldOf(l, e);
    return {
      key: only.get(e.key)!,
      expiresAt: h.expiresAt,
      eventTime: h.t,
      digest: h.d,
      batch: e.n === null ? null : (names.get(e.n) ?? null),
      dropped: e.dropped + (dropped.get(`${e.n} ${e.key}`) ?? 0),
      conflicts: conflicts.get(e.key) ?? 0,
      bucket: b,
    };
  });
}

/**
 * The first bucket after `after` (stored form; null: from the first) that
 * holds remembered keys, with its keys, each whole, in key order: those
 * after `page.key` where it is `page.bucket`, at most `limit` (0: all);
 * `last` once none of the bucket's is left after them. Null once no bucket
 * is left; `hashed` from a hashed partition (no key's text to route by).
 */
export function keysOfNextBucket(
  sql: SqlStorage,
  keys: KeyStore,
  meta: PartitionMeta,
  l: Layout,
  after: number | null,
  page: HandOutPage | null = null,
  limit = 0,
): HandOut {
  if (l.hashed) return { hashed: true };
  for (const b of bucketsOf(keys, meta, l)) {
    if (after !== null && b <= after) continue;
    const from = page?.bucket === b ? keyBytes(false, page.key) : null;
    const next = nextKeysOf(keys, meta, l, b, from, limit > 0 ? limit : Number.POSITIVE_INFINITY);
    if (next.keys.size === 0 && from === null) continue; // nothing live in it
    const only = new Map([...next.keys].map((k) => [k, k]));
    const whole = only.size > 0 ? wholeKeysOf(sql, keys, meta, l, b, only) : [];
    const sorted = whole.map((m) => ({ m, k: keyBytes(false, m.key) })).sort((x, y) => compare(x.k, y.k));
    return { bucket: b, keys: sorted.map((x) => x.m), last: next.last };
  }
  return null;
}

/**
 * Bucket b's live keys after `from` (key bytes; null: from its first), the
 * first `limit` of them in key order, without decoding the rest: each
 * segment's table is sorted, so it is entered by binary search and read for
 * `limit` live keys at most. `last`: none is left after them.
 */
function nextKeysOf(keys: KeyStore, meta: PartitionMeta, l: Layout, b: number, from: Uint8Array | null, limit: number): { keys: Set<string>; last: boolean } {
  const wm = meta.watermark;
  const found: { key: string; k: Uint8Array }[] = [];
  for (const seg of keys.buckets.segmentsOf(b)) {
    const t = seg.kept;
    let got = 0;
    for (let i = from ? t.after(from) : 0; i < t.count && got <= limit; i++) {
      const e = t.entry(i, b);
      if (!isLive(l, b, e.e, wm)) continue;
      found.push({ key: e.key, k: t.keyBytesAt(i) });
      got++;
    }
  }
  for (const e of keys.openOf(meta).kept.values()) {
    if (e.b !== b || !isLive(l, b, e.e, wm)) continue;
    const k = keyBytes(false, e.key);
    if (!from || compare(k, from) > 0) found.push({ key: e.key, k });
  }
  const sorted = found.sort((x, y) => compare(x.k, y.k));
  const unique: string[] = [];
  for (const x of sorted) if (unique[unique.length - 1] !== x.key) unique.push(x.key);
  return { keys: new Set(unique.slice(0, limit)), last: unique.length <= limit };
}

/**
 * How many live keys of the bucket under way a move has handed out (those
 * up to the page's last key): its new owners hold them now, so the stream's
 * state figure counts them there (src/stream/handed-out.ts).
 */
export function handedOutOf(keys: KeyStore, meta: PartitionMeta, l: Layout, page: HandOutPage): number {
  if (l.hashed) return 0;
  const wm = meta.watermark;
  const b = page.bucket;
  const last = keyBytes(false, page.key);
  // A bucket that starts after the watermark holds no expired key: its count up to the page is a binary search per segment.
  const noneExpired = !l.width || absoluteBucket(l, b) * l.width > wm;
  // A key is live in one entry of its bucket at most (a copy kept again after it expired is a second entry, the first one dead).
  let n = 0;
  for (const seg of keys.buckets.segmentsOf(b)) {
    const t = seg.kept;
    const end = t.after(last);
    if (noneExpired) n += end;
    else for (let i = 0; i < end; i++) if (isLive(l, b, t.expiryAt(i), wm)) n++;
  }
  for (const e of keys.openOf(meta).kept.values()) if (e.b === b && isLive(l, b, e.e, wm) && upToPage(page, keyBytes(false, e.key))) n++;
  return n;
}

/** These state keys, those remembered, each whole: what a new owner asks an old partition for (text or hashed). */
export function peekKeys(sql: SqlStorage, keys: KeyStore, meta: PartitionMeta, l: Layout, stateKeys: readonly string[]): MovedKey[] {
  const byStored = new Map(stateKeys.map((k) => [storedKey(l, k), k]));
  const byBucket = new Map<number, Map<string, string>>();
  for (const [id, h] of keys.read(meta, l, new Set(byStored.keys()))) {
    const m = byBucket.get(h.b) ?? byBucket.set(h.b, new Map()).get(h.b)!;
    m.set(id, byStored.get(id)!);
  }
  return [...byBucket].flatMap(([b, only]) => wholeKeysOf(sql, keys, meta, l, b, only));
}

/** The positions of a sorted table holding `key` (a drops table may hold it once per kept copy's number). */
function sameKey(t: SegmentTable, key: Uint8Array): number[] {
  const i = t.indexOf(key);
  if (i < 0) return [];
  const same = (j: number) => j >= 0 && j < t.count && compare(t.keyBytesAt(j), key) === 0;
  let lo = i;
  let hi = i;
  while (same(lo - 1)) lo--;
  while (same(hi + 1)) hi++;
  return Array.from({ length: hi - lo + 1 }, (_, k) => lo + k);
}

/**
 * Moved keys as held keys to write (KeyStore.write): those not remembered
 * here and not expired at the partition's watermark, each named in the open
 * chunk of names. `remembered`: the stored keys of these held here now.
 */
export function heldToTake(l: Layout, wm: number, moved: readonly MovedKey[], remembered: ReadonlySet<string>, chunk: () => NameChunk): Map<string, Held> {
  const held = new Map<string, Held>();
  const taken = moved.filter((m) => (m.expiresAt === null || m.expiresAt > wm) && !remembered.has(storedKey(l, m.key)));
  // Each batch named once, until the last of its keys here expires (null: one never does).
  const until = new Map<string, number | null>();
  for (const m of taken) {
    if (m.batch === null) continue;
    const u = until.get(m.batch);
    until.set(m.batch, u === undefined ? m.expiresAt : u === null || m.expiresAt === null ? null : Math.max(u, m.expiresAt));
  }
  const numbers = new Map([...until].map(([batch, u]) => [batch, nameBatch(chunk(), batch, u)]));
  for (const m of taken) {
    const id = storedKey(l, m.key);
    if (held.has(id)) continue;
    held.set(id, {
      b: bucketFor(l, m.expiresAt),
      expiresAt: m.expiresAt,
      t: m.eventTime,
      d: m.digest,
      n: m.batch === null ? null : numbers.get(m.batch)!,
      added: true,
      dropped: m.dropped,
      conflicts: m.conflicts,
    });
  }
  return held;
}

/**
 * Moved keys kept here as a call would have kept them (those not expired,
 * and not remembered here: this partition's copy wins); those kept, each
 * stored key once. `meta` is updated, not saved.
 */
export function adoptMoved(
  keys: KeyStore,
  meta: PartitionMeta,
  moved: readonly MovedKey[],
  settings: DedupSettings | undefined,
  chunk: () => NameChunk,
  added: (b: number, expiresAt: number) => void,
): MovedKey[] {
  const live = moved.filter((m) => m.expiresAt === null || m.expiresAt > meta.watermark);
  if (live.length === 0 || !settings) return [];
  const l = fixLayoutFor(meta, settings, live[0].expiresAt);
  const remembered = new Set(keys.read(meta, l, storedKeysOf(l, live)).keys());
  const held = heldToTake(l, meta.watermark, live, remembered, chunk);
  keys.write(meta, l, held, added);
  meta.rows += held.size;
  // Moved keys naming one key twice keep the first, as heldToTake does.
  const first = new Map<string, MovedKey>();
  for (const m of live) if (held.has(storedKey(l, m.key)) && !first.has(storedKey(l, m.key))) first.set(storedKey(l, m.key), m);
  return [...first.values()];
}

/** During a rescale, of this partition's keys those the stream counts at another partition (PartitionStats.elsewhere). */
export function countedElsewhere(keys: KeyStore, inherited: InheritedMarks, meta: PartitionMeta, move: MoveFigures): number {
  if ("olds" in move) return inherited.stillHeldElsewhere(move.olds, meta.watermark);
  const l = layoutOf(meta);
  return move.page && l ? handedOutOf(keys, meta, l, move.page) : 0;
}

/** The stored keys of moved keys, as KeyStore.read takes them. */
export const storedKeysOf = (l: Layout, moved: readonly MovedKey[]): Set<string> => new Set(moved.map((m) => storedKey(l, m.key)));

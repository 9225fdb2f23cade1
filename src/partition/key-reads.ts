/**
 * The state reader's questions over the packed keys (DESIGN §11): the
 * remembered keys in key order, a page at a time, and one key with its
 * receipt. Each segment's keys are sorted, so a page takes at most `limit`
 * entries from each after a binary search; expired entries still stored are
 * not remembered, and are not shown.
 */
import { utf8 } from "../lib/bytes";
import { keyBytes, Segment, type KeyEntry, type SegmentTable } from "../stream/key-segment";
import { isLive, type KeyStore } from "./key-store";
import { heldOf, keepsEventTime, keyLabel, keyLiteral, storedKey, type Layout } from "./layout";
import type { PartitionMeta } from "./meta";
import type { StateEntry, StateReceipt } from "./protocol";
import { openChunk, resolveNames } from "./receipts";
import { readAll, readBucket } from "./segment-rows";

const HASH_LABEL = /^#[0-9a-f]{16}$/;

/** A key as the state reader shows it. */
function entryView(l: Layout, e: KeyEntry): StateEntry {
  const h = heldOf(l, e);
  return { key: keyLabel(l, e.key), eventTime: keepsEventTime(l, h.expiresAt) ? h.t : null, expiresAt: h.expiresAt };
}

/** Where in a table the keys listed after `after` start (labels compare as their keys' bytes do). */
function startOf(l: Layout, t: SegmentTable, after: string): number {
  if (!l.hashed) return t.after(utf8(after));
  if (HASH_LABEL.test(after)) return t.after(keyBytes(true, BigInt.asIntN(64, BigInt(`0x${after.slice(1)}`)).toString()));
  // Not a label: every label is `#` + 16 hex digits, so all sort after anything below "#", none after anything above "#f…".
  return after < "#" ? 0 : after > "#ffffffffffffffff" ? t.count : t.after(new Uint8Array(0));
}

/** The remembered keys in key order, `limit` at a time after `after` (like Spark's state reader). */
export function listKeys(sql: SqlStorage, keys: KeyStore, meta: PartitionMeta, l: Layout, after: string, limit: number): StateEntry[] {
  const wm = meta.watermark;
  const found: StateEntry[] = [];
  const take = (t: SegmentTable, bucket: number) => {
    let got = 0;
    for (let i = startOf(l, t, after); i < t.count && got < limit; i++) {
      const e = t.entry(i, bucket);
      if (!isLive(l, e.b, e.e, wm)) continue;
      const view = entryView(l, e);
      if (l.hashed && view.key <= after) continue;
      found.push(view);
      got++;
    }
  };
  for (const { b, data } of readAll(sql)) take(new Segment(data).kept, b);
  for (const e of keys.openOf(meta).kept.values()) if (isLive(l, e.b, e.e, wm) && entryView(l, e).key > after) found.push(entryView(l, e));
  const order = (v: StateEntry) => (l.hashed ? v.key : utf8(v.key));
  return found
    .map((v) => ({ v, k: order(v) }))
    .sort((x, y) => compareOrder(x.k, y.k))
    .slice(0, limit)
    .map((x) => x.v);
}

function compareOrder(a: string | Uint8Array, b: string | Uint8Array): number {
  if (typeof a === "string" || typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** The one remembered key `stateKey`, if it is, with its receipt: its batch, the copies dropped against it and its conflicts. */
export function lookupReceipt(sql: SqlStorage, keys: KeyStore, meta: PartitionMeta, l: Layout, stateKey: string): StateReceipt[] {
  const id = storedKey(l, stateKey);
  const held = keys.read(meta, l, new Set([id])).get(id);
  if (!held) return [];
  let dropped = 0;
  const open = keys.openOf(meta);
  const inOpen = open.kept.get(id);
  const bytes = keyBytes(!!l.hashed, id);
  const fromOpen = !!inOpen && inOpen.n === held.n && inOpen.b === held.b && isLive(l, inOpen.b, inOpen.e, meta.watermark);
  if (fromOpen) dropped += inOpen.dropped;
  for (const d of open.drops.values()) if (d.key === id && d.b === held.b && d.n === held.n) dropped += d.dropped;
  // Its bucket's segments: its own entry's count, and the drops counted against it after its segment was written.
  for (const data of readBucket(sql, held.b)) {
    const seg = new Segment(data);
    const i = seg.kept.indexOf(bytes);
    if (i >= 0 && !fromOpen) {
      const e = seg.kept.entry(i, held.b);
      if (e.n === held.n && isLive(l, e.b, e.e, meta.watermark)) dropped += e.dropped;
    }
    dropped += dropsIn(seg.drops, bytes, held.b, held.n);
  }
  const conflicts =
    sql.exec<{ c: number }>("SELECT conflicts AS c FROM receipts WHERE b = ? AND k = json_extract(?, '$[0]')", held.b, `[${keyLiteral(l, id)}]`).toArray()[0]
      ?.c ?? 0;
  const names = resolveNames(sql, openChunk(sql, meta.names), held.n === null ? [] : [held.n]);
  return [
    {
      key: keyLabel(l, id),
      eventTime: keepsEventTime(l, held.expiresAt) ? held.t : null,
      expiresAt: held.expiresAt,
      batch: held.n === null ? null : (names.get(held.n) ?? null),
      dropped,
      conflicts,
    },
  ];
}

/** The copies a drops table counts against key (bytes) of batch number n: the key may appear once per number it was kept with. */
function dropsIn(t: SegmentTable, key: Uint8Array, b: number, n: number | null): number {
  const i = t.indexOf(key);
  if (i < 0) return 0;
  let sum = 0;
  for (const j of [i, ...neighbours(t, key, i)]) {
    const d = t.entry(j, b);
    if (d.n === n) sum += d.dropped;
  }
  return sum;
}

/** Positions next to i with the same key (a sorted table keeps equal keys together). */
function neighbours(t: SegmentTable, key: Uint8Array, i: number): number[] {
  const same = (j: number) => j >= 0 && j < t.count && equal(t.keyBytesAt(j), key);
  const out: number[] = [];
  for (let j = i - 1; same(j); j--) out.push(j);
  for (let j = i + 1; same(j); j++) out.push(j);
  return out;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

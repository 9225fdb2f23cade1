/**
 * The remembered keys, packed (src/stream/key-segment.ts): the open segment
 * in the meta row (src/partition/open-segment.ts) takes each call's new keys
 * and drop counts; once full it is sealed into a segment row per expiry
 * bucket it holds (a bucket's small newest segment is rewritten with them);
 * a bucket's rows go whole when the watermark passes it (eviction.ts). An
 * in-memory index (src/stream/segment-index.ts) says which segments may
 * hold a key; SQLite stays the truth, and the caches are made again from
 * it after a rollback or a restart.
 */
import { encodeSegment, entryKeyBytes, keyBytes, Segment, type DropEntry, type KeyEntry } from "../stream/key-segment";
import { SegmentIndex, segmentFilter } from "../stream/segment-index";
import { absoluteBucket, entryOf, expiryOf, heldOf, keyLiteral, type Held, type Layout } from "./layout";
import type { PartitionMeta } from "./meta";
import { OPEN_MAX_BYTES, OpenSegment } from "./open-segment";
import { dieInStorageIfArmed } from "./midway-fault";
import { readData, readIndex, writeSegment } from "./segment-rows";
import { BucketCache } from "./bucket-cache";

/** A bucket's newest segment takes a seal's keys while it stays under this size; past it the seal starts a new one. */
export const SEGMENT_MAX_BYTES = 98_304;

/** Whether an entry of stored bucket b is still remembered at watermark wm (isExpired() in src/stream/dedup.ts, negated). */
export const isLive = (l: Layout, b: number, e: number | null, wm: number) => e === null || expiryOf(l, b, e)! > wm;

export class KeyStore {
  private index: SegmentIndex | undefined;
  private open: OpenSegment | undefined;
  private lastS = 0;
  /** rows of the receipts table (conflicts; read once, then kept): a partition without any never clears one */
  private receipts: number | undefined;

  /** whole buckets' segments, for a rescale's move and read-through (src/partition/bucket-cache.ts) */
  readonly buckets: BucketCache;

  constructor(private readonly sql: SqlStorage) {
    this.buckets = new BucketCache(sql);
  }

  /** The sealed segments' index, read from their rows the first time. */
  segments(l: Pick<Layout, "hashed">): SegmentIndex {
    if (!this.index) {
      this.index = new SegmentIndex();
      for (const seg of readIndex(this.sql, !!l.hashed)) this.index.add(seg);
      this.lastS = this.index.maxS();
    }
    return this.index;
  }

  /** The open segment of the meta row, decoded the first time. */
  openOf(meta: PartitionMeta): OpenSegment {
    this.open ??= OpenSegment.read(meta.open);
    return this.open;
  }

  /** The remembered keys among these stored keys (eviction ran first; an expired entry still stored is not remembered). */
  read(meta: PartitionMeta, l: Layout, wanted: Set<string>): Map<string, Held> {
    const wm = meta.watermark;
    const out = new Map<string, Held>();
    const rest: string[] = [];
    const open = this.openOf(meta);
    for (const k of wanted) {
      const e = open.kept.get(k);
      if (e && isLive(l, e.b, e.e, wm)) out.set(k, heldOf(l, e));
      else rest.push(k);
    }
    if (rest.length === 0) return out;
    // Only the segments whose filters may hold a key, in one statement: a call whose keys are all new reads nothing.
    const maybe = this.segments(l).maybeHeld(!!l.hashed, rest);
    if (maybe.size === 0) return out;
    const data = readData(
      this.sql,
      [...maybe.keys()].map((s) => s.s),
    );
    for (const [seg, keys] of maybe) {
      const bytes = data.get(seg.s);
      if (!bytes) continue;
      const kept = new Segment(bytes).kept;
      for (const k of keys) {
        if (out.has(k)) continue;
        const i = kept.indexOf(keyBytes(!!l.hashed, k));
        if (i < 0) continue;
        const e = kept.entry(i, seg.b);
        if (isLive(l, e.b, e.e, wm)) out.set(k, heldOf(l, e));
      }
    }
    return out;
  }

  /**
   * Writes a call's changes: its new keys (with the copies dropped against
   * them) and the drop counts of keys held before go to the open segment as
   * one chunk; conflicts to their receipts rows. Keeps the earliest expiry,
   * and seals the open segment once it is full. `onAdded`: each new key's
   * bucket and expiry (the eviction's front).
   */
  write(meta: PartitionMeta, l: Layout, held: ReadonlyMap<string, Held>, onAdded: (b: number, expiresAt: number) => void): void {
    const kept: KeyEntry[] = [];
    const drops: DropEntry[] = [];
    for (const [id, h] of held) {
      if (h.added) {
        kept.push(entryOf(l, id, h));
        if (h.expiresAt !== null) {
          if (meta.next_expiry === null || h.expiresAt < meta.next_expiry) meta.next_expiry = h.expiresAt;
          onAdded(h.b, h.expiresAt);
        }
      } else if (h.dropped > 0) drops.push({ key: id, b: h.b, n: h.n, dropped: h.dropped });
    }
    if (kept.length > 0) this.clearStaleReceipts(l, kept);
    const open = this.openOf(meta);
    if (kept.length > 0 || drops.length > 0) {
      open.append(!!l.hashed, kept, drops);
      meta.open = open.stored();
    }
    this.writeConflicts(l, held);
    if (open.bytes.length > OPEN_MAX_BYTES) this.seal(meta, l);
  }

  /** A key kept anew where an expired copy of it had conflicts counted (its bucket not yet gone) starts from none. */
  private clearStaleReceipts(l: Layout, kept: readonly KeyEntry[]): void {
    this.receipts ??= this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM receipts").one().n;
    if (this.receipts === 0) return;
    this.sql.exec(
      "DELETE FROM receipts WHERE (b, k) IN (SELECT c.value ->> 0, c.value ->> 1 FROM json_each(?) c)",
      `[${kept.map((e) => `[${e.b},${keyLiteral(l, e.key)}]`).join(",")}]`,
    );
    this.receipts = undefined;
  }

  /** Conflicts are rare: a receipts row each (src/partition/receipts.ts). */
  private writeConflicts(l: Layout, held: ReadonlyMap<string, Held>): void {
    const conflicts = [...held].filter(([, h]) => h.conflicts > 0);
    if (conflicts.length === 0) return;
    this.sql.exec(
      `INSERT INTO receipts (b, k, n, dropped, conflicts) SELECT c.value ->> 0, c.value ->> 1, NULL, 0, c.value ->> 2 FROM jsonb_each(jsonb(?)) c WHERE true
       ON CONFLICT (b, k) DO UPDATE SET conflicts = conflicts + excluded.conflicts`,
      `[${conflicts.map(([id, h]) => `[${h.b},${keyLiteral(l, id)},${h.conflicts}]`).join(",")}]`,
    );
    this.receipts = undefined;
  }

  /**
   * The open segment into segment rows, one per bucket it holds (expired
   * entries left out): into the bucket's newest segment while it stays
   * under SEGMENT_MAX_BYTES (rewritten, still one row), else a new one.
   */
  seal(meta: PartitionMeta, l: Layout): void {
    const open = this.openOf(meta);
    const wm = meta.watermark;
    const byBucket = new Map<number, { kept: KeyEntry[]; drops: DropEntry[] }>();
    const of = (b: number) => byBucket.get(b) ?? byBucket.set(b, { kept: [], drops: [] }).get(b)!;
    for (const e of open.kept.values()) if (isLive(l, e.b, e.e, wm)) of(e.b).kept.push(e);
    for (const d of open.drops.values()) if (l.width === 0 || (absoluteBucket(l, d.b) + 1) * l.width > wm + 1) of(d.b).drops.push(d);
    const index = this.segments(l);
    for (const [b, fresh] of byBucket) {
      const tail = index.tailOf(b);
      let { kept, drops } = fresh;
      let s: number;
      if (tail && tail.bytes + OPEN_MAX_BYTES < SEGMENT_MAX_BYTES) {
        const old = new Segment(readData(this.sql, [tail.s]).get(tail.s)!);
        kept = [...[...old.kept.entries(b)].filter((e) => isLive(l, b, e.e, wm)), ...kept];
        drops = [...Segment.dropsOf(old.drops, b), ...drops];
        s = tail.s;
      } else s = ++this.lastS;
      const merged = foldDrops(kept, drops);
      const data = encodeSegment(!!l.hashed, merged.kept, merged.drops);
      const filter = segmentFilter(
        !!l.hashed,
        merged.kept.map((e) => entryKeyBytes(!!l.hashed, e)),
        merged.kept.length,
      );
      writeSegment(this.sql, s, b, merged.kept.length, data);
      index.add({ s, b, n: merged.kept.length, bytes: data.length, filter });
      dieInStorageIfArmed(meta.epoch, "partition-seal-midway"); // test builds only
    }
    this.open = OpenSegment.read(null);
    meta.open = null;
  }

  /** The open segment without the buckets `gone` (eviction); true if it changed. */
  dropOpen(meta: PartitionMeta, l: Layout, gone: ReadonlySet<number>): boolean {
    const changed = this.openOf(meta).retain(!!l.hashed, (e) => !gone.has(e.b));
    if (changed) meta.open = this.openOf(meta).stored();
    return changed;
  }

  /** The table was emptied (a fresh incarnation): no segment, nothing open. */
  emptied(): void {
    this.index = new SegmentIndex();
    this.lastS = 0;
    this.open = OpenSegment.read(null);
    this.receipts = 0;
    this.buckets.forget();
  }

  /** Read again next time (after a rollback, or once storage was deleted). */
  forget(): void {
    this.index = undefined;
    this.open = undefined;
    this.receipts = undefined;
    this.buckets.forget();
  }
}

/** Drops against keys the same segment keeps go into their entries; drops of one key and number are summed. */
function foldDrops(kept: KeyEntry[], drops: readonly DropEntry[]): { kept: KeyEntry[]; drops: DropEntry[] } {
  const byKey = new Map(kept.map((e) => [e.key, e]));
  const rest = new Map<string, DropEntry>();
  for (const d of drops) {
    const k = byKey.get(d.key);
    if (k && k.n === d.n) {
      byKey.set(d.key, { ...k, dropped: k.dropped + d.dropped });
      continue;
    }
    const id = `${d.n} ${d.key}`;
    const had = rest.get(id);
    rest.set(id, had ? { ...had, dropped: had.dropped + d.dropped } : { ...d });
  }
  return { kept: [...byKey.values()], drops: [...rest.values()] };
}

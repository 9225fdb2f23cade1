/**
 * The open segment: the keys a partition added since its last seal, of every
 * bucket, and the copies dropped against keys of sealed segments. It rides
 * in the meta row (meta.open), which every apply writes anyway, so a call's
 * new keys and drop counts cost no row of their own: each call appends one
 * chunk (a segment with a bucket per entry, src/stream/key-segment.ts), and
 * once the open segment is OPEN_MAX_BYTES the key store seals it into the
 * buckets' segment rows (src/partition/key-store.ts). In memory it is kept
 * decoded, for lookups.
 */
import { concat } from "../lib/bytes";
import { encodeSegment, Segment, segmentsIn, type DropEntry, type KeyEntry } from "../stream/key-segment";

/**
 * Past this size the open segment is sealed into segment rows. The meta row
 * is rewritten by every call, so it stays well under a row's 2 MB; 48 KiB (not
 * 16) makes seals rarer and merges into a bucket's last segment fewer: 1.5×
 * less CPU per event for 500-event batches, no change for single events.
 * The workers tests build with `__OPEN_MAX_BYTES__` at 16 KiB, so that their
 * model runs reach many seals with few keys (the code path is the same).
 */
declare const __OPEN_MAX_BYTES__: number;
export const OPEN_MAX_BYTES = typeof __OPEN_MAX_BYTES__ === "number" ? __OPEN_MAX_BYTES__ : 49_152;

const dropId = (d: Pick<DropEntry, "key" | "b" | "n">) => `${d.b} ${d.n} ${d.key}`;

export class OpenSegment {
  /** stored key → its kept entry (the latest: an expired one may be kept again) */
  readonly kept = new Map<string, KeyEntry>();
  /** copies dropped against keys kept by sealed segments */
  readonly drops = new Map<string, DropEntry>();

  private constructor(public bytes: Uint8Array) {}

  /** The open segment as the meta row stores it (null: empty). */
  static read(stored: Uint8Array | null): OpenSegment {
    const open = new OpenSegment(stored ?? new Uint8Array(0));
    for (const seg of segmentsIn(open.bytes)) {
      for (const e of seg.kept.entries()) open.kept.set(e.key, e);
      for (const d of Segment.dropsOf(seg.drops)) open.count(d);
    }
    return open;
  }

  /** A drop: into its key's entry if the open segment keeps it, else with the drops against sealed keys. */
  private count(d: DropEntry): void {
    const k = this.kept.get(d.key);
    if (k && k.b === d.b && k.n === d.n) {
      k.dropped += d.dropped;
      return;
    }
    const id = dropId(d);
    const had = this.drops.get(id);
    if (had) had.dropped += d.dropped;
    else this.drops.set(id, { ...d });
  }

  /** A call's new keys and drops, as one more chunk. */
  append(hashed: boolean, kept: readonly KeyEntry[], drops: readonly DropEntry[]): void {
    if (kept.length === 0 && drops.length === 0) return;
    this.bytes = concat(this.bytes, encodeSegment(hashed, kept, drops, true));
    for (const e of kept) this.kept.set(e.key, { ...e });
    for (const d of drops) this.count(d);
  }

  /** Keeps only the entries `keep` takes, written again as one chunk; true if any went. */
  retain(hashed: boolean, keep: (e: { b: number }) => boolean): boolean {
    const kept = [...this.kept.values()];
    const drops = [...this.drops.values()];
    if (kept.every(keep) && drops.every(keep)) return false;
    this.kept.clear();
    this.drops.clear();
    this.bytes = new Uint8Array(0);
    this.append(hashed, kept.filter(keep), drops.filter(keep));
    return true;
  }

  get empty(): boolean {
    return this.bytes.length === 0;
  }

  /** The stored form (null: empty). */
  stored(): Uint8Array | null {
    return this.bytes.length === 0 ? null : this.bytes;
  }
}

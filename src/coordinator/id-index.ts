/**
 * Where a committed batch id's record is, without a row per id (DESIGN §9,
 * Coordinator migration 10).
 *
 * A committed batch's record (its body's hash and stored report) rides in its
 * micro-batch's commit record (the outbox row, then a `groups` row), which is
 * written anyway. What a retry needs is to find it by id, and an index entry
 * per id was a row written per request (a third of a webhook's bill) and
 * another deleted when the window forgot it. Instead:
 *
 * - the ids committed since the last slice are kept exactly, in memory
 *   (`recent`, at most about SLICE_IDS; read again from the commit records
 *   after a restart);
 * - every SLICE_IDS ids become a slice: a Bloom filter over them, stored as
 *   one row (`id_slices`) in the commit that fills it, with the commit
 *   numbers it covers. An id a filter may hold is looked for in those
 *   commits' records (one read; the record decides, so a false "maybe" costs
 *   a read and never a wrong answer).
 *
 * Never a false "absent": every id committed is in `recent` or in a slice
 * written in the same transaction as its commit. A slice goes when the
 * window has forgotten all its commits; ids of forgotten commits that a
 * slice still claims find no record. Memory: 4 bytes per id remembered
 * (~34 MB for 8.6 million, 100 requests/s with a 24-hour window).
 */
import { Bloom, bloomHash, type BloomHash } from "../lib/bloom";

/** A slice's filter covers this many ids (the last commit that fills it may add more). */
export const SLICE_IDS = 4_096;
/**
 * ~0.0006% false "maybe" per slice (k = 8): a new id is looked up in every
 * slice, and a "maybe" reads that slice's commit records (a millisecond or
 * so), so the rate is kept low enough for thousands of slices (16 bits, ~0.06%,
 * would cost a read per lookup past ~1,700 slices, 7 million ids).
 */
export const BITS_PER_ID = 32;

/** Coordinator migration 10's table: a slice per SLICE_IDS committed ids (bits null: ids of commits from before it, in `batches`). */
export const ID_SLICES_TABLE = "CREATE TABLE IF NOT EXISTS id_slices (last INTEGER PRIMARY KEY, first INTEGER NOT NULL, n INTEGER NOT NULL, bits BLOB)";

/** Where an id's record may be: the commit that has it (certain), or runs of commit numbers whose records may hold it. */
export type IdLocation = { seq: number } | { ranges: [first: number, last: number][] };

interface Slice {
  first: number;
  last: number;
  /** null: commits from before the index, whose ids are rows of `batches` */
  bloom: Bloom | null;
}

export class CommittedIds {
  /** ids committed after the last slice → their commit numbers */
  private recent: Map<string, number> | undefined;
  private slices: Slice[] | undefined;

  constructor(
    private readonly sql: SqlStorage,
    /** the committed ids (with their commit numbers) after commit `afterSeq`, from the commit records */
    private readonly committedAfter: (afterSeq: number) => Iterable<[key: string, seq: number]>,
    /** how many ids a slice covers */
    private readonly sliceIds = SLICE_IDS,
  ) {}

  /** Where `key`'s record may be (null: not committed, or forgotten). Reads nothing once loaded. */
  locate(key: string): IdLocation | null {
    this.load();
    const seq = this.recent!.get(key);
    if (seq !== undefined) return { seq };
    let h: BloomHash | undefined;
    const ranges: [number, number][] = [];
    for (const s of this.slices!) if (s.bloom?.has((h ??= bloomHash(key)))) ranges.push([s.first, s.last]);
    return ranges.length > 0 ? { ranges } : null;
  }

  /** Ids committed now as `seq` each (inside the commit's transaction): a full `recent` becomes a slice, in the same transaction. */
  add(ids: readonly [key: string, seq: number][]): void {
    this.load();
    for (const [key, seq] of ids) this.recent!.set(key, seq);
    if (this.recent!.size < this.sliceIds || ids.length === 0) return;
    const bloom = new Bloom(this.recent!.size, BITS_PER_ID);
    let first = Infinity;
    let last = 0;
    for (const [key, seq] of this.recent!) {
      bloom.add(bloomHash(key));
      first = Math.min(first, seq);
      last = Math.max(last, seq);
    }
    this.sql.exec("INSERT INTO id_slices (last, first, n, bits) VALUES (?, ?, ?, ?)", last, first, bloom.count, bytesOf(bloom.toBytes()));
    this.slices!.push({ first, last, bloom });
    this.recent!.clear();
  }

  /** The window forgot commits up to `upTo` (inside its transaction): slices wholly before go. */
  prune(upTo: number): void {
    this.sql.exec("DELETE FROM id_slices WHERE last <= ?", upTo);
    if (this.slices) this.slices = this.slices.filter((s) => s.last > upTo);
    if (this.recent) for (const [key, seq] of this.recent) if (seq <= upTo) this.recent.delete(key);
  }

  /** Storage changed under it (a rolled-back transaction, the stream dropped): read again when next asked. */
  forget(): void {
    this.recent = undefined;
    this.slices = undefined;
  }

  private load(): void {
    if (this.slices && this.recent) return;
    this.slices = this.sql
      .exec<{ first: number; last: number; n: number; bits: ArrayBuffer | null }>("SELECT first, last, n, bits FROM id_slices ORDER BY last")
      .toArray()
      .map((r) => ({ first: r.first, last: r.last, bloom: r.bits === null ? null : Bloom.fromBytes(new Uint8Array(r.bits), r.n) }));
    // The ids after the newest slice are those the records hold exactly (none of them is in a slice).
    this.recent = new Map(this.committedAfter(this.slices.length > 0 ? this.slices[this.slices.length - 1].last : 0));
  }
}

/** SQLite stores ArrayBuffers as BLOBs: exactly the view's bytes. */
const bytesOf = (u: Uint8Array): ArrayBuffer => u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;

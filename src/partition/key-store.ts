/**
 * The remembered keys (the keys table, src/partition/layout.ts): which
 * expiry buckets hold keys, the in-memory filters of which keys each may
 * hold, the read of the rows a call may meet and the write of what it
 * changed. The caches live as long as the object; the Partition drops them
 * after a rollback (they are made again from storage).
 */
import { addColumn } from "../storage/migrations";
import { BucketFilters } from "../stream/bucket-filters";
import { hasReceiptColumn, readHeld, writeHeld } from "./key-rows";
import { expiryOf, isCompact, keyLiteral, type Held, type Layout } from "./layout";
import type { PartitionMeta } from "./meta";
import type { StateEntry, StateReceipt } from "./protocol";
import { listKeys, lookupReceipt, openChunk } from "./receipts";

/** Past this many keys a partition probes every live bucket instead of keeping filters (1.5–3 MB per million keys, and a scan of them on wake). */
export const FILTERED_KEYS_MAX = 2_000_000;

export class KeyStore {
  /** the expiry buckets that hold keys (a few, stored form): a key is looked up in each; read once, then kept */
  private buckets: Set<number> | undefined;
  /** whether keys has its r column (src/partition/layout.ts; read once, then kept) */
  private withR: boolean | undefined;
  /** which buckets may hold a key (in memory; made again after a rollback or a restart) */
  private filters: BucketFilters | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The buckets that hold keys (stored form), read with a skip scan of the primary key the first time. */
  liveBuckets(): Set<number> {
    this.buckets ??= new Set(
      this.sql
        .exec<{ b: number }>(
          `WITH RECURSIVE bs(b) AS (SELECT min(b) FROM keys UNION ALL SELECT (SELECT min(b) FROM keys WHERE b > bs.b) FROM bs WHERE bs.b IS NOT NULL)
           SELECT b FROM bs WHERE b IS NOT NULL`,
        )
        .toArray()
        .map((r) => r.b),
    );
    return this.buckets;
  }

  private hasR(): boolean {
    this.withR ??= hasReceiptColumn(this.sql);
    return this.withR;
  }

  /** The buckets' key filters (src/stream/bucket-filters.ts), each made from a scan of its bucket when first asked. */
  private keyFilters(l: Layout): BucketFilters {
    this.filters ??= new BucketFilters((b) =>
      this.sql
        .exec<{ k: string }>(`SELECT ${l.hashed ? "CAST(k AS TEXT)" : "k"} AS k FROM keys WHERE b = ?`, b)
        .toArray()
        .map((r) => String(r.k)),
    );
    return this.filters;
  }

  /** The rows held for these stored keys, of a partition holding `rows` keys (eviction ran first, so none has expired). */
  read(rows: number, l: Layout, wanted: Set<string>): Map<string, Held> {
    const live = this.liveBuckets();
    if (rows > FILTERED_KEYS_MAX) {
      this.filters = undefined; // and no longer kept up to date: made again from scans if the partition shrinks
      return readHeld(this.sql, l, this.hasR(), live, wanted);
    }
    // Only the keys some bucket may hold, in those buckets: a call whose keys are all new reads nothing.
    const maybe = this.keyFilters(l).maybeHeld(wanted, live);
    return readHeld(this.sql, l, this.hasR(), maybe.buckets, maybe.keys);
  }

  /**
   * Writes the keys added and the counts, and keeps the buckets, the earliest
   * expiry and `front` (the eviction's copy of the watermark's bucket,
   * src/partition/eviction.ts) up to date.
   */
  write(meta: PartitionMeta, l: Layout, held: ReadonlyMap<string, Held>): void {
    const intoFront: string[] = [];
    let loose = false;
    for (const [id, h] of held) {
      if (!h.added) continue;
      if (!isCompact(l, h.e)) loose = true;
      const live = this.liveBuckets();
      // A bucket new to the partition holds only what this call adds: its filter starts empty, with no scan.
      if (!live.has(h.b)) live.add(h.b), this.filters?.open(h.b);
      this.filters?.add(h.b, id);
      const e = expiryOf(l, h.b, h.e);
      if (e !== null && (meta.next_expiry === null || e < meta.next_expiry)) meta.next_expiry = e;
      if (h.b === meta.front_b) intoFront.push(`[${e},${keyLiteral(l, id)}]`);
    }
    if (loose && !this.hasR()) {
      addColumn(this.sql, "keys", "r", "INTEGER");
      this.withR = true;
    }
    writeHeld(this.sql, l, held, this.hasR());
    if (intoFront.length > 0) {
      this.sql.exec("INSERT INTO front (e, k) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)", `[${intoFront.join(",")}]`);
    }
  }

  /** The buckets below `at` were deleted whole (eviction). */
  droppedBelow(at: number): void {
    const buckets = this.liveBuckets();
    for (const b of buckets) if (b < at) buckets.delete(b), this.filters?.drop(b);
  }

  /** The remembered keys in key order, `limit` at a time after `after`. */
  list(l: Layout, after: string, limit: number): StateEntry[] {
    return listKeys(this.sql, l, after, limit);
  }

  /** The one remembered key `stateKey`, if it is, with its receipt (names: meta.names). */
  lookup(l: Layout, names: string | null, stateKey: string): StateReceipt[] {
    return lookupReceipt(this.sql, l, this.hasR(), openChunk(this.sql, names), JSON.stringify([...this.liveBuckets()]), stateKey);
  }

  /** The table was emptied (a fresh incarnation): no bucket, and filters made afresh. */
  emptied(): void {
    this.buckets = new Set();
    this.filters = undefined;
  }

  /** Read again next time (after a rollback, or once storage was deleted). */
  forget(): void {
    this.buckets = undefined;
    this.filters = undefined;
    this.withR = undefined;
  }
}

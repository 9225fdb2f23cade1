/**
 * The move's bucket cache (src/partition/bucket-cache.ts) over a real
 * partition's SQLite: a bucket read once is not read again while its rows
 * stay the same; a segment written, rewritten in place or deleted since is
 * seen at once; the least recently used bucket goes first past the cap, and
 * a bucket larger than the cap is read every time.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BucketCache } from "../../../src/partition/bucket-cache";
import type { Partition } from "../../../src/partition/partition";
import { deleteBuckets, writeSegment } from "../../../src/partition/segment-rows";
import { encodeSegment, type KeyEntry } from "../../../src/stream/key-segment";

let n = 0;
const fresh = () => env.PARTITION.getByName(`bucket-cache-${++n}/0`) as DurableObjectStub<Partition>;

const entries = (b: number, from: number, count: number): KeyEntry[] =>
  Array.from({ length: count }, (_, i) => ({ key: `["k${String(from + i).padStart(6, "0")}"]`, b, e: 5, t: null, d: null, n: 1, dropped: 0 }));
const segment = (b: number, from: number, count: number) => encodeSegment(false, entries(b, from, count), []);

/** The cache over `sql`, and how many statements read blobs through it. */
function counted(sql: SqlStorage, cap?: number) {
  const reads = { data: 0 };
  const proxy = {
    exec: (q: string, ...b: unknown[]) => {
      if (q.startsWith("SELECT data")) reads.data++;
      return sql.exec(q, ...b);
    },
  } as SqlStorage;
  return { cache: new BucketCache(proxy, cap), reads };
}
const keysIn = (segs: { kept: { count: number; entry(i: number, b: number): KeyEntry } }[], b: number) =>
  segs.flatMap((s) => Array.from({ length: s.kept.count }, (_, i) => s.kept.entry(i, b).key));

describe("BucketCache", () => {
  it("reads a bucket once while its rows stay the same, and again once one changes", async () => {
    await runInDurableObject(fresh(), (_o, state) => {
      const sql = state.storage.sql;
      writeSegment(sql, 1, 7, 3, segment(7, 0, 3));
      writeSegment(sql, 2, 7, 2, segment(7, 10, 2));
      writeSegment(sql, 3, 8, 1, segment(8, 20, 1));
      const { cache, reads } = counted(sql);
      expect(keysIn(cache.segmentsOf(7), 7)).toHaveLength(5);
      expect(keysIn(cache.segmentsOf(7), 7)).toHaveLength(5);
      expect(keysIn(cache.segmentsOf(8), 8)).toHaveLength(1);
      expect(reads.data).toBe(2);
      // Rewritten in place (a seal into the bucket's newest segment): the same number, other bytes.
      writeSegment(sql, 2, 7, 4, segment(7, 10, 4));
      expect(keysIn(cache.segmentsOf(7), 7)).toHaveLength(7);
      expect(reads.data).toBe(3);
      writeSegment(sql, 4, 7, 1, segment(7, 30, 1));
      expect(keysIn(cache.segmentsOf(7), 7)).toContain('["k000030"]');
      deleteBuckets(sql, [7]);
      expect(cache.segmentsOf(7)).toEqual([]);
      expect(reads.data).toBe(5);
      cache.forget();
      cache.segmentsOf(8);
      expect(reads.data).toBe(6);
    });
  });

  it("keeps at most its cap: the least recently used bucket goes first, a larger one is never kept", async () => {
    await runInDurableObject(fresh(), (_o, state) => {
      const sql = state.storage.sql;
      for (const b of [1, 2, 3]) writeSegment(sql, b, b, 40, segment(b, 100 * b, 40));
      writeSegment(sql, 9, 9, 400, segment(9, 1_000, 400));
      const one = segment(1, 100, 40).length;
      const { cache, reads } = counted(sql, 2 * one + 10);
      cache.segmentsOf(1);
      cache.segmentsOf(2);
      cache.segmentsOf(1); // 1 is now the most recently used
      cache.segmentsOf(3); // 2 goes
      expect(reads.data).toBe(3);
      cache.segmentsOf(1);
      cache.segmentsOf(3);
      expect(reads.data).toBe(3);
      cache.segmentsOf(2);
      expect(reads.data).toBe(4);
      cache.segmentsOf(9);
      cache.segmentsOf(9);
      expect(reads.data).toBe(6);
    });
  });
});

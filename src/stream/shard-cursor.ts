/**
 * Where a reader of a lane (/output, /late, …) resumes. With one shard it is
 * one commit number, as always. With several, each shard numbers its own
 * commits (src/stream/shards.ts), so the cursor is a list of commit numbers,
 * comma-separated, each naming its own shard by its value; a shard not named
 * is read from its start. X-Commit-Seq answers with one number per shard.
 */
import { SHARD_SEQ_BASE, seqBase, shardOfSeq } from "./shards";

export type CursorResult = { ok: true; after: number[] } | { ok: false; detail: string };

/** Per shard (index k), the commit number to read after; `text` is the ?after= value (absent: from the start). */
export function parseCursor(text: string | undefined, shards: number): CursorResult {
  const after = Array.from({ length: shards }, (_, k) => seqBase(k));
  if (text === undefined || text === "") return { ok: true, after };
  const parts = text.split(",");
  const seen = new Set<number>();
  for (const p of parts) {
    if (!/^\d{1,16}$/.test(p))
      return { ok: false, detail: `after: a commit number, or one per shard separated by commas (X-Commit-Seq of the last read), not "${text.slice(0, 80)}"` };
    const n = Number(p);
    const k = shardOfSeq(n);
    if (!Number.isSafeInteger(n) || (shards === 1 && parts.length > 1)) return { ok: false, detail: "after: this stream has one shard: one commit number" };
    if (shards === 1) return { ok: true, after: [n] }; // one shard: any number, as before
    if (k >= shards)
      return { ok: false, detail: `after: ${n} is no commit of this stream's ${shards} shards (shard k numbers its commits from k × ${SHARD_SEQ_BASE} + 1)` };
    if (seen.has(k)) return { ok: false, detail: `after: two commit numbers of shard ${k}` };
    seen.add(k);
    after[k] = n;
  }
  return { ok: true, after };
}

/** The X-Commit-Seq of a read that covered each shard up to `upTo[k]`. */
export function formatCursor(upTo: readonly number[]): string {
  return upTo.join(",");
}

/**
 * The names of the batches that kept keys (DESIGN §11), as a call handles
 * them in memory: the open chunk a batch is named in, and the kept copies
 * whose batch an answer names. Pure; the chunks' rows are
 * src/partition/receipts.ts.
 */

/** The open chunk of names: numbers n … n + b.length − 1; u: the latest expiry of their keys (null: one never expires; absent: none yet). */
export interface NameChunk {
  n: number;
  u?: number | null;
  b: string[];
}

/** Names `batch` in the open chunk; returns its number. */
export function nameBatch(chunk: NameChunk, batch: string, until: number | null): number {
  chunk.u = chunk.u === undefined ? until : chunk.u === null || until === null ? null : Math.max(chunk.u, until);
  chunk.b.push(batch);
  return chunk.n + chunk.b.length - 1;
}

/**
 * A sealed chunk's names as its row stores them: a JSON array, or, where
 * they share a prefix (a source's name and the usual start of its batch
 * ids), {"p": prefix, "b": the rest of each}. Batch ids such as
 * `orders-2026-12-07-000123` then cost their last characters, not a whole
 * id each: a chunk's row fits a fraction of a page, not half of one.
 */
export function packNames(names: readonly string[]): string {
  let p = names[0] ?? "";
  for (const name of names) {
    let i = 0;
    while (i < p.length && i < name.length && p.charCodeAt(i) === name.charCodeAt(i)) i++;
    p = p.slice(0, i);
  }
  // Not cut inside a surrogate pair: each part stays valid text.
  const last = p.charCodeAt(p.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) p = p.slice(0, -1);
  const plain = JSON.stringify(names);
  const packed = JSON.stringify({ p, b: names.map((name) => name.slice(p.length)) });
  return packed.length < plain.length ? packed : plain;
}

/** A kept copy whose batch an answer names: its entry, its row's position there, the batch's number (null: none). */
export interface WantedName {
  entry: number;
  at: number;
  n: number | null;
}

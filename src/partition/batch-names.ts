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

/** A kept copy whose batch an answer names: its entry, its row's position there, the batch's number (null: none). */
export interface WantedName {
  entry: number;
  at: number;
  n: number | null;
}

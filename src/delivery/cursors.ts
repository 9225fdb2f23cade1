/**
 * Where a destination has read each shard's commits to (src/stream/shards.ts):
 * one cursor per shard, each a commit number and a row within the next
 * commit. A stream of one shard has the one cursor it always had. A shard
 * the destination has no cursor for (none stored yet) is read from its
 * start. Pure.
 */
import { SHARD_SEQ_BASE, seqBase, shardEnd, shardOfSeq } from "../stream/shards";

export interface ReadCursor {
  /** every commit up to it read … */
  seq: number;
  /** … and rows before `index` of commit `seq + 1` (0: none of it) */
  index: number;
}

/** Shard k's cursor (its start when none is stored). */
export const cursorOf = (cursors: readonly ReadCursor[], k: number): ReadCursor => cursors[k] ?? { seq: seqBase(k), index: 0 };

/** SQL: the shard of a row's `seq` (shardOfSeq), to group a table's rows by shard. */
export const SHARD_OF_SEQ = `CAST(seq / ${SHARD_SEQ_BASE} AS INTEGER)`;

/** The seqs from `seq` to its shard's end ([from, below)): a replay's, or a mark's shard. */
export const restOfShard = (seq: number): [number, number] => [seq, shardEnd(shardOfSeq(seq))];

/** Shard k's seqs ([from, below)). */
export const seqsOf = (k: number): [number, number] => [seqBase(k), shardEnd(k)];

/** The cursors with shard k's replaced (shards before k without one get their start). */
export function withCursor(cursors: readonly ReadCursor[], k: number, c: ReadCursor): ReadCursor[] {
  const out = Array.from({ length: Math.max(cursors.length, k + 1) }, (_, i) => cursorOf(cursors, i));
  out[k] = c;
  return out;
}

/** Every shard's cursor at its start (a stream created again starts over). */
export const startCursors = (shards: number): ReadCursor[] => Array.from({ length: shards }, (_, k) => ({ seq: seqBase(k), index: 0 }));

/**
 * The key rows of partitions before version 9 (keys: b, k, t, e, d[, r]),
 * read once by the upgrade to segments (src/partition/migrations.ts). Pure.
 *
 * - From version 7 a partition with `base` stores b relative to it and e
 *   relative to its bucket's start; older ones both absolute.
 * - A hashed key with an expiry ("compact") holds its batch number and
 *   drop count in t as number + dropped·2^32; any other key in r.
 */
import type { KeyEntry } from "../stream/key-segment";
import { entryOf, type Held, type Layout } from "./layout";

/** 2^32: number + dropped·T_SHIFT in t (compact keys) or r (others). */
export const T_SHIFT = 4_294_967_296;

/** A version 3–8 key row. */
export type LegacyKeyRow = {
  b: number;
  k: string;
  t: number | null;
  e: number | null;
  d: string | null;
  r: number | null;
};

/** The row as a segment entry (e as the offset in its bucket). */
export function legacyEntry(l: Layout, row: LegacyKeyRow): KeyEntry {
  const compact = !!l.hashed && row.e !== null;
  const v = compact ? row.t : row.r;
  const n = v === null || v % T_SHIFT === 0 ? null : v % T_SHIFT;
  const expiresAt = row.e === null ? null : l.base === null ? row.e : row.e + (row.b + l.base) * l.width;
  const held: Held = { b: row.b, expiresAt, t: compact ? null : row.t, d: row.d, n, dropped: v === null ? 0 : Math.floor(v / T_SHIFT), conflicts: 0 };
  return entryOf(l, row.k, held);
}

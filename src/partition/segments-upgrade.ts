/**
 * Partition version 9 (src/partition/migrations.ts): the key rows of
 * versions 3–8 (a row per key, src/partition/legacy-keys.ts) become
 * segments, a bucket at a time, and `keys` and `front` go. Every key of the
 * old rows is remembered (eviction deleted the expired ones exactly), so the
 * key count stays as it is.
 */
import { encodeSegment, type KeyEntry } from "../stream/key-segment";
import { addColumn } from "../storage/migrations";
import { legacyEntry, type LegacyKeyRow } from "./legacy-keys";
import type { Layout } from "./layout";
import { SEGMENTS_TABLE, writeSegment } from "./segment-rows";

/** Kept keys per segment the upgrade writes (~12–60 bytes each: well under a row's 2 MB). */
const UPGRADE_SEGMENT_KEYS = 4_096;

export function upgradeToSegments(sql: SqlStorage): void {
  sql.exec(SEGMENTS_TABLE);
  addColumn(sql, "meta", "open", "BLOB");
  const meta = sql
    .exec<{ width: number | null; hashed: number; base: number | null; hash_key: string | null }>("SELECT width, hashed, base, hash_key FROM meta")
    .toArray()[0];
  if (meta && meta.width !== null) {
    const l: Layout = { hashed: meta.hashed, hashKey: meta.hash_key, width: meta.width, base: meta.base };
    const withR = sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('keys')")
      .toArray()
      .some((c) => c.name === "r");
    const buckets = sql.exec<{ b: number }>("SELECT DISTINCT b FROM keys ORDER BY b").toArray();
    let s = 0;
    for (const { b } of buckets) {
      const rows = sql
        .exec<LegacyKeyRow>(
          `SELECT b, ${l.hashed ? "CAST(k AS TEXT)" : "k"} AS k, t, e, CAST(d AS TEXT) AS d, ${withR ? "r" : "NULL"} AS r FROM keys WHERE b = ?`,
          b,
        )
        .toArray();
      for (let at = 0; at < rows.length; at += UPGRADE_SEGMENT_KEYS) {
        const kept: KeyEntry[] = rows.slice(at, at + UPGRADE_SEGMENT_KEYS).map((r) => legacyEntry(l, { ...r, k: String(r.k) }));
        writeSegment(sql, ++s, b, kept.length, encodeSegment(!!l.hashed, kept, []));
      }
    }
  }
  sql.exec("DROP TABLE IF EXISTS keys; DROP TABLE IF EXISTS front");
  const metaColumns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
  if (metaColumns.some((c) => c.name === "front_b")) sql.exec("ALTER TABLE meta DROP COLUMN front_b");
}

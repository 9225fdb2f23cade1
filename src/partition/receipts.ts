/**
 * Receipts (DESIGN §11): which batch kept a remembered key, and the copies
 * dropped against it. Pure SQL helpers over a Partition's storage.
 *
 * A batch that stores keys in a partition gets a number there; each key row
 * holds its batch's number and its drop count (src/partition/layout.ts), so
 * naming costs no row per key. The names themselves go in chunks: the open
 * chunk rides in the meta row (which every apply writes anyway), and once it
 * holds NAMES_CHUNK_BYTES it becomes one kept_names row, numbers n … n+len−1:
 * about a row per fifty batches instead of one per batch. A chunk goes once
 * the last of its keys has expired (until; null: never). Conflicts, which are
 * rare, are counted in a receipts row (b, k).
 */
import { T_SHIFT } from "./legacy-keys";
import type { KeptBatch } from "./protocol";
import { packNames, type NameChunk, type WantedName } from "./batch-names";

/** The open chunk becomes a kept_names row past this size (the meta row stays small). */
export const NAMES_CHUNK_BYTES = 2_048;

/** A kept_names row's name count, and its name i (SQL), in either stored form (packNames: an array, or a prefix and the rests). */
const NAMES_COUNT = "CASE json_type(batches) WHEN 'array' THEN json_array_length(batches) ELSE json_array_length(batches, '$.b') END";
const nameAt = (i: string) =>
  `CASE json_type(batches) WHEN 'array' THEN json_extract(batches, '$[' || (${i}) || ']') ELSE json_extract(batches, '$.p') || json_extract(batches, '$.b[' || (${i}) || ']') END`;

/** The open chunk as the meta row holds it; a partition without one (upgraded from version 6) starts after kept_names' last number. */
export function openChunk(sql: SqlStorage, names: string | null): NameChunk {
  if (names) return JSON.parse(names) as NameChunk;
  const last = sql.exec<{ next: number }>(`SELECT n + ${NAMES_COUNT} AS next FROM kept_names ORDER BY n DESC LIMIT 1`).toArray()[0];
  return { n: last?.next ?? 1, b: [] };
}

/** Writes the open chunk as a row once it is full; returns the chunk to go on with. */
export function sealChunk(sql: SqlStorage, chunk: NameChunk): NameChunk {
  if (JSON.stringify(chunk.b).length < NAMES_CHUNK_BYTES) return chunk;
  sql.exec("INSERT INTO kept_names (n, batches, until) VALUES (?, ?, ?)", chunk.n, packNames(chunk.b), chunk.u ?? null);
  return { n: chunk.n + chunk.b.length, b: [] };
}

/** The names of these numbers: the open chunk's, then the rows' (one statement). */
export function resolveNames(sql: SqlStorage, chunk: NameChunk, numbers: Iterable<number>): Map<number, string> {
  const out = new Map<number, string>();
  const older: number[] = [];
  for (const m of new Set(numbers)) {
    if (m >= chunk.n) {
      const name = chunk.b[m - chunk.n];
      if (name !== undefined) out.set(m, name);
    } else older.push(m);
  }
  if (older.length === 0) return out;
  const rows = sql
    .exec<{ m: number; batch: string | null }>(
      `SELECT m.value AS m, (SELECT ${nameAt("m.value - n")} FROM kept_names WHERE n <= m.value ORDER BY n DESC LIMIT 1) AS batch
       FROM json_each(?) m`,
      JSON.stringify(older),
    )
    .toArray();
  for (const r of rows) if (r.batch !== null) out.set(r.m, r.batch);
  return out;
}

/** Per entry (of `entries`), the kept copies' batches, named (chunk: the open chunk, read at first use). */
export function keptBatchesOf(sql: SqlStorage, chunk: () => NameChunk, wanted: readonly WantedName[], entries: number): KeptBatch[][] {
  const kept = Array.from({ length: entries }, (): KeptBatch[] => []);
  if (wanted.length > 0) {
    const names = resolveNames(
      sql,
      chunk(),
      wanted.flatMap((w) => w.n ?? []),
    );
    for (const w of wanted) kept[w.entry].push({ at: w.at, batch: w.n === null ? null : (names.get(w.n) ?? null) });
  }
  return kept;
}

/**
 * Receipts go with their keys (buckets below `at`, stored form); chunks of
 * names once all their keys have expired, looked for among the oldest only
 * (numbers grow with time, and so, roughly, do expiries). Returns the open
 * chunk, emptied if all its keys have expired too.
 */
export function forgetReceipts(sql: SqlStorage, chunk: NameChunk | null, at: number, wm: number): NameChunk | null {
  sql.exec("DELETE FROM receipts WHERE b < ?", at);
  sql.exec("DELETE FROM kept_names WHERE n IN (SELECT n FROM kept_names ORDER BY n LIMIT 256) AND until <= ?", wm);
  return chunk && chunk.u != null && chunk.u <= wm ? { n: chunk.n + chunk.b.length, b: [] } : chunk;
}

/** Partition version 6 (src/partition/migrations.ts): a hashed partition's keys with an expiry take their receipts' dropped counts into `t`. */
const COMPACT = "(SELECT hashed FROM meta) = 1 AND EXISTS (SELECT 1 FROM keys WHERE keys.b = receipts.b AND keys.k = receipts.k AND keys.e IS NOT NULL)";
export const RECEIPTS_V6 = `
  UPDATE keys SET t = coalesce(keys.t, 0) + r.dropped * ${T_SHIFT} FROM receipts r
   WHERE (SELECT hashed FROM meta) = 1 AND keys.e IS NOT NULL AND r.b = keys.b AND r.k = keys.k AND r.dropped > 0;
  UPDATE receipts SET dropped = 0 WHERE dropped > 0 AND ${COMPACT};
  DELETE FROM receipts WHERE n IS NULL AND dropped = 0 AND conflicts = 0;
`;

/**
 * Partition version 7: names in chunks (kept_batches' rows become chunks of
 * one), and every key that is not compact takes its number and drop count
 * into r: from its receipts row, or, for a text key, from the batch whose
 * range of expiries held its expiry (version 5's way of naming without a
 * row). Receipts rows keep only conflicts. b and e stay absolute (base null).
 */
export function receiptsV7(sql: SqlStorage, addColumn: (table: string, column: string, declaration: string) => void): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS kept_names (n INTEGER PRIMARY KEY, batches TEXT NOT NULL, until INTEGER);
    INSERT INTO kept_names (n, batches, until) SELECT n, json_array(batch), until FROM kept_batches;
  `);
  addColumn("meta", "names", "TEXT");
  addColumn("meta", "base", "INTEGER");
  const loose = sql.exec<{ n: number }>("SELECT count(*) AS n FROM keys WHERE NOT (coalesce((SELECT hashed FROM meta), 0) = 1 AND e IS NOT NULL)").one().n;
  if (loose > 0) {
    addColumn("keys", "r", "INTEGER");
    const byRange = "(SELECT n FROM (SELECT n, lo FROM kept_batches WHERE hi >= keys.e ORDER BY hi LIMIT 1) WHERE lo <= keys.e)";
    sql.exec(`
      UPDATE keys SET r = x.v FROM (
        SELECT keys.b AS b, keys.k AS k,
          coalesce(rc.n, CASE WHEN coalesce((SELECT hashed FROM meta), 0) = 0 AND keys.e IS NOT NULL THEN ${byRange} END, 0) + coalesce(rc.dropped, 0) * ${T_SHIFT} AS v
        FROM keys LEFT JOIN receipts rc ON rc.b = keys.b AND rc.k = keys.k
        WHERE NOT (coalesce((SELECT hashed FROM meta), 0) = 1 AND keys.e IS NOT NULL)
      ) x WHERE keys.b = x.b AND keys.k = x.k AND x.v > 0;
    `);
  }
  sql.exec(`
    UPDATE receipts SET n = NULL, dropped = 0 WHERE n IS NOT NULL OR dropped > 0;
    DELETE FROM receipts WHERE conflicts = 0;
    DROP INDEX IF EXISTS kept_batches_by_hi;
    DROP TABLE kept_batches;
  `);
}

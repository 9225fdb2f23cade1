import type { Migration } from "../storage/migrations";
import type { StreamConfig } from "../stream/config";
import { ID_SLICES_TABLE } from "./id-index";

/** The largest event time a row of this stream can have been accepted with, at `at` (the clock-skew guard). */
function latestAcceptable(config: StreamConfig, at: number): number {
  const skews = [config.maxEventTimeSkew, ...Object.values(config.sources).map((s) => s.maxEventTimeSkew ?? 0)];
  return at + Math.max(...skews);
}

/**
 * Coordinator migration 5: the ledger per micro-batch (DESIGN §9). From one
 * row per batch id written at its begin and rewritten at its commit (with a
 * commit-number index: three rows written per request) to
 * - `batches`: one row per committed batch id (its body and stored report),
 *   written once, at the commit, and forgotten after the idempotency window;
 * - `groups`: one row per committed micro-batch: its commit numbers, commit
 *   time, largest event time and each member's id and lane objects (the commit
 *   index /output and publication read, and what a prune deletes by);
 * - `begun`: one row per micro-batch that began and has not committed (the
 *   watermark, time and config each member is judged by, for a retry after a
 *   crash), deleted by its commit.
 * Old committed rows become one-member groups (their commit time from their
 * report, their largest event time bounded by the clock-skew guard); begun
 * rows become one-member begin records.
 */
export const LEDGER_MIGRATION: Migration = {
  version: 7,
  does: "the ledger per micro-batch: batches (one row per committed id), groups (one per committed micro-batch), begun (one per micro-batch in flight)",
  up: (sql) => {
    const meta = sql.exec<{ config: string }>("SELECT config FROM meta").toArray()[0];
    const config = meta ? (JSON.parse(meta.config) as StreamConfig) : null;
    const skew = config ? latestAcceptable(config, 0) : 86_400_000;
    sql.exec(`
      CREATE TABLE batches_v5 (source TEXT NOT NULL, batch_id TEXT NOT NULL, body_hash TEXT NOT NULL, seq INTEGER NOT NULL, report TEXT NOT NULL,
        PRIMARY KEY (source, batch_id)) WITHOUT ROWID;
      CREATE TABLE groups (seq INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, committed_at INTEGER NOT NULL, max_t INTEGER, members TEXT NOT NULL);
      CREATE TABLE begun (id TEXT PRIMARY KEY, at INTEGER NOT NULL, members TEXT NOT NULL) WITHOUT ROWID;
    `);
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'batches'").toArray().length === 0) {
      sql.exec("ALTER TABLE batches_v5 RENAME TO batches");
      return;
    }
    sql.exec(
      `INSERT INTO batches_v5 (source, batch_id, body_hash, seq, report) SELECT source, batch_id, body_hash, seq, report FROM batches WHERE seq IS NOT NULL`,
    );
    sql.exec(
      `INSERT INTO groups (seq, first_seq, committed_at, max_t, members)
       SELECT seq, seq, c, CASE WHEN ?1 THEN c + ?2 ELSE NULL END, json_array(json_array(source, batch_id, data_key, late_key, rejected_key))
       FROM (SELECT *, coalesce(CASE WHEN json_type(report) = 'array' THEN json_extract(report, '$[7]') ELSE json_extract(report, '$.progress.committedAt') END, begun_at) AS c
             FROM batches WHERE seq IS NOT NULL)`,
      config?.eventTime ? 1 : 0,
      skew,
    );
    sql.exec(
      `INSERT INTO begun (id, at, members)
       SELECT source || char(10) || batch_id, begun_at, json_array(json_array(source, batch_id, body_hash, watermark, begun_at, config_version))
       FROM batches WHERE seq IS NULL`,
    );
    sql.exec("DROP INDEX IF EXISTS batches_by_seq; DROP TABLE batches; ALTER TABLE batches_v5 RENAME TO batches;");
  },
};

/**
 * Coordinator migration 10: committed ids without a row each (CommittedIds,
 * src/coordinator/id-index.ts). Ids committed before it stay rows of
 * `batches`, marked by a slice with no filter over their commit numbers, so
 * that the index reads only newer commit records.
 */
export function indexCommittedIds(sql: SqlStorage): void {
  sql.exec(ID_SLICES_TABLE);
  const last = sql
    .exec<{ n: number | null }>(
      "SELECT max(n) AS n FROM (SELECT max(seq) AS n FROM groups UNION ALL SELECT max(seq) FROM outbox UNION ALL SELECT max(seq) FROM outbox_sealed)",
    )
    .one().n;
  if (last !== null && last > 0) sql.exec("INSERT OR IGNORE INTO id_slices (last, first, n, bits) VALUES (?, 1, 0, NULL)", last);
}

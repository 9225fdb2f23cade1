import { ADVICE_TABLE } from "../stream/advisor/live";
import { METRICS_TABLE } from "../stream/metrics";
import { addSameEventLanes, outboxPerChunk, OUTBOX_TABLES } from "../output/outbox-layout";
import { PUBLISH_FAILURES_TABLE, PUBLISHED_TABLE } from "../output/publisher";
import { TABLE_COLUMNS_TABLE } from "../table/known-columns";
import type { Migration } from "../storage/migrations";
import { LANE_REFS_TABLE } from "./lane-refs";
import { indexCommittedIds, LEDGER_MIGRATION } from "./ledger-migrations";
import { COUNTERS_MIGRATION } from "./counters";
import { foldState } from "./state";

/**
 * The Coordinator's storage layouts, oldest first (src/storage/migrations.ts).
 * They run only for a stream that exists: a Coordinator creates its tables
 * when a stream is created, so requests naming streams that do not exist
 * leave no storage behind.
 */
export const COORDINATOR_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "config and its versions, sources, the batch ledger, partition figures, credentials",
    up: (sql) =>
      sql.exec(`
        CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, config TEXT NOT NULL,
          config_version INTEGER NOT NULL, epoch TEXT NOT NULL, created_at INTEGER NOT NULL, watermark INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS configs (version INTEGER PRIMARY KEY, config TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS sources (name TEXT PRIMARY KEY, max_t INTEGER, last_batch_at INTEGER) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS batches (source TEXT NOT NULL, batch_id TEXT NOT NULL, body_hash TEXT NOT NULL,
          watermark INTEGER NOT NULL, begun_at INTEGER NOT NULL, config_version INTEGER NOT NULL, seq INTEGER, data_key TEXT, late_key TEXT,
          rejected_key TEXT, report TEXT, PRIMARY KEY (source, batch_id)) WITHOUT ROWID;
        CREATE UNIQUE INDEX IF NOT EXISTS batches_by_seq ON batches (seq) WHERE seq IS NOT NULL;
        CREATE TABLE IF NOT EXISTS partitions (p INTEGER PRIMARY KEY, rows INTEGER NOT NULL, bytes INTEGER NOT NULL, watermark INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS credentials (id TEXT PRIMARY KEY, source TEXT NOT NULL, type TEXT NOT NULL, label TEXT,
          created_at INTEGER NOT NULL, material TEXT NOT NULL) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS credentials_by_material ON credentials (material);
      `),
  },
  {
    version: 2,
    does: "partitions.next_expiry (the eviction fan-out visits only partitions with keys due; 0, due, until a partition reports)",
    up: (sql) => {
      // Guarded: storage from before versions were recorded may have it already.
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('partitions')").toArray();
      if (!columns.some((c) => c.name === "next_expiry")) sql.exec("ALTER TABLE partitions ADD COLUMN next_expiry INTEGER DEFAULT 0");
    },
  },
  {
    version: 3,
    does: "the outbox, publication progress (manifest, table) and metrics counters",
    up: (sql) => sql.exec(OUTBOX_TABLES + PUBLISHED_TABLE + METRICS_TABLE),
  },
  { version: 4, does: "advice: the delay advisor's live figures per source", up: (sql) => sql.exec(ADVICE_TABLE) },
  {
    version: 5,
    does: "the table's known columns (ingest column cap) and publication failures",
    up: (sql) => sql.exec(TABLE_COLUMNS_TABLE + PUBLISH_FAILURES_TABLE),
  },
  {
    version: 6,
    does: "the conflicts and duplicates lanes: their outbox columns and commit index (lane_refs)",
    up: (sql) => (addSameEventLanes(sql), sql.exec(LANE_REFS_TABLE)),
  },
  LEDGER_MIGRATION,
  COUNTERS_MIGRATION,
  {
    version: 9,
    does: "one state record per commit (watermark, sources, advice, partition figures, counters, the micro-batch begun) in its outbox row or the state row; the outbox flushed per chunk, its ids fixed by commit numbers",
    up: (sql) => (outboxPerChunk(sql), foldState(sql)),
  },
  {
    version: 10,
    does: "committed batch ids without a row each: their records ride in the commit records, found through slices of Bloom filters (id_slices); ids committed before stay rows of batches until the window forgets them",
    up: indexCommittedIds,
  },
  {
    version: 11,
    does: "meta.incarnation: how many times the stream's name had been created when this one was (the Registry's count; 1 before it was kept)",
    up: (sql) => {
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "incarnation")) sql.exec("ALTER TABLE meta ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 1");
    },
  },
  {
    version: 12,
    does: "meta.shard: which of the stream's ingest shards this Coordinator is (0: the stream's own, and the only one of a stream with one shard)",
    up: (sql) => {
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "shard")) sql.exec("ALTER TABLE meta ADD COLUMN shard INTEGER NOT NULL DEFAULT 0");
    },
  },
  {
    version: 13,
    does: "meta.map_version and meta.rescale: the partition map's version (1 until a rescale) and the rescale under way",
    up: (sql) => {
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "map_version")) sql.exec("ALTER TABLE meta ADD COLUMN map_version INTEGER NOT NULL DEFAULT 1");
      if (!columns.some((c) => c.name === "rescale")) sql.exec("ALTER TABLE meta ADD COLUMN rescale TEXT");
    },
  },
  {
    version: 14,
    does: "meta.shard_change: a change of the stream's shard count under way or done (src/stream/shard-change.ts)",
    up: (sql) => {
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "shard_change")) sql.exec("ALTER TABLE meta ADD COLUMN shard_change TEXT");
    },
  },
];

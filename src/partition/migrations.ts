/**
 * The Partition's storage layouts (src/partition/partition.ts runs them
 * through its SqliteObject base): the migrations, oldest first, and the
 * layout a new partition gets at once.
 */
import { addColumn, schemaVersion, type Migration } from "../storage/migrations";
import { tableExists } from "../storage/sqlite-object";
import { RECEIPTS_V6, receiptsV7 } from "./receipts";
import { SEGMENTS_TABLE } from "./segment-rows";
import { upgradeToSegments } from "./segments-upgrade";
import { FENCE_TABLE } from "./fence";
import { INHERITED_TABLE } from "./inherited-marks";

/** The Partition's storage layouts, oldest first (src/storage/migrations.ts). */
export const PARTITION_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "keys with their expiry (and an expiry index), the partition's meta row, the decision ledger",
    up: (sql) =>
      sql.exec(`
        CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, watermark INTEGER NOT NULL, rows INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS keys (k TEXT PRIMARY KEY, t INTEGER, expires INTEGER) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS keys_by_expiry ON keys (expires) WHERE expires IS NOT NULL;
        CREATE TABLE IF NOT EXISTS ledger (batch TEXT PRIMARY KEY, at INTEGER NOT NULL, decisions TEXT NOT NULL) WITHOUT ROWID;
      `),
  },
  {
    version: 2,
    does: "meta.next_expiry: the earliest expiry, so that eviction runs only when something is due",
    up: (sql) => {
      // Guarded: storage from before versions were recorded may have it already.
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "next_expiry")) sql.exec("ALTER TABLE meta ADD COLUMN next_expiry INTEGER");
      sql.exec("UPDATE meta SET next_expiry = (SELECT min(expires) FROM keys)");
    },
  },
  {
    version: 3,
    does: "compact state: keys clustered by expiry bucket (b, k) with no per-key expiry index; front: the bucket the watermark is in, by expiry; meta.width, meta.hashed, meta.front_b",
    up: (sql) => {
      sql.exec(`
        CREATE TABLE keys_v3 (b INTEGER NOT NULL, k NOT NULL, t INTEGER, e INTEGER, PRIMARY KEY (b, k)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS front (e INTEGER NOT NULL, k NOT NULL, PRIMARY KEY (e, k)) WITHOUT ROWID;
        ALTER TABLE meta ADD COLUMN width INTEGER;
        ALTER TABLE meta ADD COLUMN hashed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE meta ADD COLUMN front_b INTEGER;
      `);
      // The stream's delay isn't known here: a width from the spread of the expiries held.
      const held = sql
        .exec<{ n: number; lo: number | null; hi: number | null }>("SELECT count(*) AS n, min(expires) AS lo, max(expires) AS hi FROM keys")
        .one();
      const width = held.n === 0 ? null : held.lo === null ? 0 : Math.max(60_000, Math.floor((held.hi! - held.lo) / 8));
      sql.exec("UPDATE meta SET width = ?", width);
      sql.exec(
        "INSERT INTO keys_v3 (b, k, t, e) SELECT CASE WHEN expires IS NULL OR ?1 = 0 THEN 0 ELSE expires / CAST(?1 AS INTEGER) END, k, t, expires FROM keys",
        width ?? 0,
      );
      sql.exec("DROP INDEX IF EXISTS keys_by_expiry; DROP TABLE keys; ALTER TABLE keys_v3 RENAME TO keys;");
    },
  },
  {
    version: 4,
    does: "the decision ledger per micro-batch: ledger.batch names an entry (a micro-batch, or one batch), ledger.decisions is a JSON array of [batch key, decisions]; meta.pending holds small entries",
    up: (sql) => {
      sql.exec("UPDATE ledger SET decisions = json_array(json_array(batch, decisions))");
      const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray();
      if (!columns.some((c) => c.name === "pending")) sql.exec("ALTER TABLE meta ADD COLUMN pending TEXT");
    },
  },
  {
    version: 5,
    does: "what counts as the same event: keys.d (the kept copy's 64-bit content digest), kept_batches (the batches' names by number), receipts (copies dropped against a key; its batch's number where t can't hold it)",
    up: (sql) => {
      addColumn(sql, "keys", "d", "INTEGER");
      sql.exec(`
        CREATE TABLE IF NOT EXISTS kept_batches (n INTEGER PRIMARY KEY, batch TEXT NOT NULL, until INTEGER, lo INTEGER, hi INTEGER);
        CREATE TABLE IF NOT EXISTS receipts (b INTEGER NOT NULL, k NOT NULL, n INTEGER, dropped INTEGER NOT NULL, conflicts INTEGER NOT NULL, PRIMARY KEY (b, k)) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 6,
    does: "a hashed key with an expiry counts its dropped copies in keys.t (n + dropped·2^32, src/partition/receipts.ts): their receipts rows go, but for conflicts",
    up: (sql) => sql.exec(RECEIPTS_V6),
  },
  {
    version: 7,
    does: "receipts at no row per batch: a key's batch number and drop count in its row (t, or keys.r where t holds the event time), batches' names in chunks (kept_names; the open one in meta.names); new partitions store b and e relative (meta.base)",
    up: (sql) => receiptsV7(sql, (table, column, declaration) => addColumn(sql, table, column, declaration)),
  },
  {
    version: 8,
    does: "meta.hash_key: the secret of the keyed key hash (SipHash-2-4) that partitions fixing a hashed layout from now on store keys by; older hashed partitions keep their unkeyed hash (meta.hashed 1)",
    up: (sql) => addColumn(sql, "meta", "hash_key", "TEXT"),
  },
  {
    version: 9,
    does: "packed keys: a partition's keys in segments (a row per run of a bucket's keys, with its filter) and the open segment in meta.open, instead of a row per key; keys and front go",
    up: upgradeToSegments,
  },
  {
    version: 10,
    does: "fence: the map that replaced this partition's in an online rescale (src/partition/fence.ts)",
    up: (sql) => sql.exec(FENCE_TABLE),
  },
  {
    version: 11,
    does: "inherited: keys a new partition read through in an online rescale, for the stream's state figure (src/partition/inherited-marks.ts)",
    up: (sql) => sql.exec(INHERITED_TABLE),
  },
];

/**
 * The layout the migrations above build, at once, for storage that never
 * held anything (a new partition): one transaction and a row per table
 * instead of ten steps and rebuilds.
 */
export const PARTITION_LAYOUT = `
  CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, watermark INTEGER NOT NULL, rows INTEGER NOT NULL,
    next_expiry INTEGER, width INTEGER, hashed INTEGER NOT NULL DEFAULT 0, pending TEXT, names TEXT, base INTEGER, hash_key TEXT, open BLOB);
  ${SEGMENTS_TABLE};
  CREATE TABLE ledger (batch TEXT PRIMARY KEY, at INTEGER NOT NULL, decisions TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE receipts (b INTEGER NOT NULL, k NOT NULL, n INTEGER, dropped INTEGER NOT NULL, conflicts INTEGER NOT NULL, PRIMARY KEY (b, k)) WITHOUT ROWID;
  CREATE TABLE kept_names (n INTEGER PRIMARY KEY, batches TEXT NOT NULL, until INTEGER);
  ${FENCE_TABLE};
  ${INHERITED_TABLE};
`;

/** Whether the storage is new: no version recorded, and none of the tables a partition from before versions were recorded has. */
export function isNewPartition(sql: SqlStorage): boolean {
  return schemaVersion(sql) === 0 && !tableExists(sql, "meta") && !tableExists(sql, "keys");
}

/** A new partition's storage: the current layout at once, recorded as the latest version (call inside a transaction). */
export function createCurrentLayout(sql: SqlStorage): void {
  sql.exec(PARTITION_LAYOUT);
  sql.exec("INSERT OR REPLACE INTO _schema (id, version) VALUES (1, ?)", Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)));
}

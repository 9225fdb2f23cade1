import { addColumn } from "../storage/migrations";
import { LANES } from "./sink";

/** The outbox's tables (src/output/outbox.ts) and the Coordinator migrations that shaped them (src/coordinator/migrations.ts). */
// AUTOINCREMENT: entry ids are never reused, so a flushed entry's record stays unambiguous (layout before migration 9).
export const OUTBOX_TABLES = `
  CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, data BLOB NOT NULL,
    late BLOB NOT NULL, rejected BLOB NOT NULL, batches TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS outbox_flushed (id INTEGER PRIMARY KEY, data TEXT, late TEXT, rejected TEXT);
  CREATE TABLE IF NOT EXISTS flushes (first INTEGER PRIMARY KEY, last INTEGER NOT NULL);
`;

/**
 * An outbox table of migration 9 (`outbox`, and `outbox_sealed` while a
 * flush drains it). The micro-batch's commit record rides along (seq …
 * members, as a `groups` row has them: src/coordinator/ledger.ts) and so
 * does the state record (v, state: src/coordinator/state.ts), so that a
 * small micro-batch's commit writes this one row besides its batch ids.
 */
export const outboxTable = (name: string) => `CREATE TABLE IF NOT EXISTS ${name} (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, data BLOB NOT NULL,
  late BLOB NOT NULL, rejected BLOB NOT NULL, conflicts BLOB NOT NULL, duplicates BLOB NOT NULL, batches TEXT NOT NULL, v INTEGER, state TEXT,
  seq INTEGER, first_seq INTEGER, committed_at INTEGER, max_t INTEGER, members TEXT);`;

/** The conflicts and duplicates lanes (DESIGN §11) in the outbox: added by a later migration, empty for entries from before. */
export function addSameEventLanes(sql: SqlStorage): void {
  addColumn(sql, "outbox", "conflicts", "BLOB NOT NULL DEFAULT x''");
  addColumn(sql, "outbox", "duplicates", "BLOB NOT NULL DEFAULT x''");
  addColumn(sql, "outbox_flushed", "conflicts", "TEXT");
  addColumn(sql, "outbox_flushed", "duplicates", "TEXT");
}

/**
 * Coordinator migration 9's part here: the outbox without AUTOINCREMENT (its
 * waiting entries become the sealed table the next flush drains), the chunk
 * records, and the floor above every id given so far (meta.outbox_floor), so
 * that ids fixed by commit numbers never meet an old one.
 */
export function outboxPerChunk(sql: SqlStorage): void {
  sql.exec(outboxTable("outbox_sealed"));
  const max = (q: string) => sql.exec<{ n: number | null }>(q).one().n ?? 0;
  const hasSequence = sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").toArray().length > 0;
  const floor = Math.max(
    hasSequence ? max("SELECT max(seq) AS n FROM sqlite_sequence WHERE name = 'outbox'") : 0,
    max("SELECT max(id) AS n FROM outbox"),
    max("SELECT max(id) AS n FROM outbox_flushed"),
    // Guarded, as migrations are: storage with this layout already keeps its ids above the floor it has.
    sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'outbox_chunks'").toArray().length > 0 ? max("SELECT max(last) AS n FROM outbox_chunks") : 0,
    max("SELECT max(id) AS n FROM outbox_sealed"),
  );
  addColumn(sql, "meta", "outbox_floor", "INTEGER NOT NULL DEFAULT 0");
  sql.exec("UPDATE meta SET outbox_floor = ?", floor);
  sql.exec(outboxTable("outbox_sealed"));
  // Guarded, as migrations are: storage that has this layout already keeps the state records its rows carry.
  const carried = sql
    .exec<{ name: string }>("SELECT name FROM pragma_table_info('outbox')")
    .toArray()
    .some((c) => c.name === "state")
    ? ", v, state, seq, first_seq, committed_at, max_t, members"
    : "";
  sql.exec(`INSERT INTO outbox_sealed (id, at, ${LANES.join(", ")}, batches${carried}) SELECT id, at, ${LANES.join(", ")}, batches${carried} FROM outbox`);
  sql.exec("DROP TABLE outbox");
  sql.exec(outboxTable("outbox"));
  sql.exec("CREATE TABLE IF NOT EXISTS outbox_chunks (first INTEGER PRIMARY KEY, last INTEGER NOT NULL, keys TEXT NOT NULL, offsets TEXT NOT NULL)");
  addColumn(sql, "groups", "spans", "TEXT");
}

/**
 * Versioned storage for the SQLite Durable Objects. Each class lists its
 * migrations in order; an object runs the ones its storage has not seen yet,
 * on first use, in one transaction each, and records the version it reached
 * (SQLite's `PRAGMA user_version` is not available in Durable Objects, so the
 * version lives in a one-row table). Storage written by an older release is
 * thereby brought up to date in place, and a newer release never meets an
 * unknown layout.
 */
export interface Migration {
  version: number;
  /** what it changes, for the log */
  does: string;
  up(sql: SqlStorage): void;
}

export const SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS _schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)";

/** The version the storage is at (0: never migrated, or written before versions were recorded). */
export function schemaVersion(sql: SqlStorage): number {
  sql.exec(SCHEMA_TABLE);
  return sql.exec<{ version: number }>("SELECT version FROM _schema").toArray()[0]?.version ?? 0;
}

/**
 * Runs the migrations above the storage's version, in order, each with the
 * version bump in one transaction. `transact` is the object's transactionSync.
 */
export function migrate(sql: SqlStorage, migrations: readonly Migration[], transact: <T>(fn: () => T) => T): number {
  let at = schemaVersion(sql);
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= at) continue;
    transact(() => {
      m.up(sql);
      sql.exec("INSERT OR REPLACE INTO _schema (id, version) VALUES (1, ?)", m.version);
    });
    at = m.version;
  }
  return at;
}

/**
 * `ALTER TABLE … ADD COLUMN` unless the column is there: storage written by a
 * release (or a test) that already had it must not fail its upgrade.
 */
export function addColumn(sql: SqlStorage, table: string, column: string, declaration: string): void {
  const columns = sql.exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`).toArray();
  if (!columns.some((c) => c.name === column)) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${declaration}`);
}

/**
 * The columns a stream's table has, or will have once committed rows are
 * appended, kept in the Coordinator's SQLite so that ingest counts new columns
 * against `table.maxColumns` (src/stream/table-fields.ts) without reading the
 * table. Each column carries when it became known, and a batch is judged by
 * the columns known before it began (its begin time is in the ledger): a
 * retry of a batch that crashed before its commit then plans exactly as its
 * first attempt did, whatever committed in between, so a row accepted (and
 * remembered by the partitions) the first time is accepted again.
 *
 * Columns are added after a micro-batch commits (those its accepted rows
 * add) and after each table append (the table's own columns, so a table
 * written before this existed is counted too).
 */
export const TABLE_COLUMNS_TABLE = "CREATE TABLE IF NOT EXISTS table_columns (name TEXT PRIMARY KEY, known_at INTEGER NOT NULL) WITHOUT ROWID;";

type Sql = Pick<SqlStorage, "exec">;

/** The columns that became known strictly before `at`. */
export function columnsKnownBefore(sql: Sql, at: number): string[] {
  return sql
    .exec<{ name: string }>("SELECT name FROM table_columns WHERE known_at < ?", at)
    .toArray()
    .map((r) => r.name);
}

/** Records columns as known from `at` on; a column known already keeps its time. */
export function recordColumns(sql: Sql, names: readonly string[], at: number): void {
  if (names.length === 0) return;
  sql.exec("INSERT OR IGNORE INTO table_columns (name, known_at) SELECT value, ? FROM json_each(?)", at, JSON.stringify(names));
}

/**
 * Which rows a stream's Iceberg table can take, judged at ingest so that a
 * row that cannot be a table row is `rejected` by index with a reason (and
 * never reaches the output), instead of failing or silently changing an
 * append later. Pure: the planner calls it (src/stream/batch.ts), the table
 * writer uses the same name rule defensively (src/table/table-schema.ts).
 *
 * - A top-level field name becomes a column name: it must be non-empty, at
 *   most MAX_FIELD_NAME_LENGTH characters, without control characters, not
 *   `__proto__` (JavaScript objects swallow it), and not equal to another
 *   column ignoring case (DuckDB, Spark and Trino resolve names without case:
 *   `SELECT a` would read `A`).
 * - A table has at most `table.maxColumns` columns (default 1,000): a row
 *   that would add columns past it is rejected. Columns are counted against
 *   what the table is known to have when the batch began (the declared
 *   schema, plus columns committed rows added: the Coordinator keeps them),
 *   plus what the batch's own earlier rows add. Rows committed concurrently
 *   may still overshoot; the table writer enforces the cap again.
 */

export const DEFAULT_MAX_COLUMNS = 1_000;
export const MAX_COLUMNS_LIMIT = 10_000;
export const MAX_FIELD_NAME_LENGTH = 256;

// C0, DEL and C1 controls: invisible, and NUL ends a name in C readers.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `name` cannot be a table column, or null. */
export function fieldNameProblem(name: string): string | null {
  if (name === "") return "an empty field name cannot be a table column";
  if (name === "__proto__") return 'field "__proto__" cannot be a table column';
  if (name.length > MAX_FIELD_NAME_LENGTH) return `field "${name.slice(0, 32)}…" is longer than ${MAX_FIELD_NAME_LENGTH} characters`;
  if (CONTROL.test(name)) return `field ${JSON.stringify(name)} has a control character`;
  return null;
}

/** Names that readers without case tell apart from no others: one column each. */
export const caseFold = (name: string) => name.toLowerCase();

/** A stream's column cap (its config's `table.maxColumns`; typed by shape: config.ts imports this module). */
export function maxColumnsOf(config: { table?: { maxColumns?: number } }): number {
  return config.table?.maxColumns ?? DEFAULT_MAX_COLUMNS;
}

/**
 * One batch's rows against the table's columns, in input order. `known` are
 * the columns the table has (or will have) when the batch began; each row
 * admitted adds its new columns for the rows after it.
 */
export class ColumnBudget {
  private readonly byFold = new Map<string, string>();
  private readonly added: string[] = [];

  constructor(
    known: Iterable<string>,
    private readonly max: number,
  ) {
    for (const name of known) if (!this.byFold.has(caseFold(name))) this.byFold.set(caseFold(name), name);
  }

  /** The columns admitted rows add, in the order they first appear. */
  get newColumns(): readonly string[] {
    return this.added;
  }

  /** Null when the row fits (its new columns are then counted), else why not. */
  admit(row: object): string | null {
    const fresh: string[] = [];
    const seen = new Map<string, string>();
    for (const name of Object.keys(row)) {
      const problem = fieldNameProblem(name);
      if (problem) return problem;
      const fold = caseFold(name);
      const twin = seen.get(fold);
      if (twin !== undefined) return `fields "${twin}" and "${name}" differ only in case: a table column cannot tell them apart`;
      seen.set(fold, name);
      const column = this.byFold.get(fold);
      if (column === undefined) fresh.push(name);
      else if (column !== name) return `field "${name}" differs only in case from the table's column "${column}"`;
    }
    if (fresh.length > 0 && this.byFold.size + fresh.length > this.max) {
      return `adds ${fresh.length} new column${fresh.length === 1 ? "" : "s"} (${fresh
        .slice(0, 3)
        .map((n) => `"${n}"`)
        .join(", ")}${fresh.length > 3 ? ", …" : ""}) to a table of ${this.byFold.size}; at most ${this.max} ("table.maxColumns")`;
    }
    for (const name of fresh) {
      this.byFold.set(caseFold(name), name);
      this.added.push(name);
    }
    return null;
  }
}

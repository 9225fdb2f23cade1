import { DurableObject } from "cloudflare:workers";
import { countedEnv, countedSql } from "../instrument/opcount";
import { migrate, type Migration } from "./migrations";

/** How a SQLite Durable Object keeps its storage (SqliteObject). */
export interface StorageConventions {
  /** its layouts, oldest first (src/storage/migrations.ts) */
  migrations: readonly Migration[];
  /**
   * The class its SQL statements count under (src/instrument/opcount.ts); null: not
   * counted (the Registry and the Destination never were, and the bench's
   * figures stay comparable).
   */
  countAs: string | null;
  /** whether its calls to other objects and R2 count (countedEnv) */
  countCalls?: boolean;
  /**
   * A table that exists once the object has been set up: its storage is then
   * created only by ensureStorage(), so requests naming objects that were
   * never set up leave nothing behind. Absent: created on first use.
   */
  createdWith?: string;
}

/** Whether `table` exists: the one "has this object been set up" probe. */
export function tableExists(sql: SqlStorage, table: string): boolean {
  return sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?", table).one().n > 0;
}

/**
 * The base of the SQLite Durable Objects (in the spirit of partyserver's
 * Server): the counted `sql`, versioned migrations run on first use, and the
 * exists-probe, in one place, so every class keeps its storage the same way.
 */
export abstract class SqliteObject<E extends object> extends DurableObject<E> {
  protected readonly sql: SqlStorage;
  /** whether the storage has been set up (always true without `createdWith`) */
  protected exists: boolean;
  private readonly migrations: readonly Migration[];

  constructor(ctx: DurableObjectState, env: E, conventions: StorageConventions) {
    super(ctx, conventions.countCalls ? countedEnv(env) : env);
    this.sql = conventions.countAs === null ? ctx.storage.sql : countedSql(ctx.storage.sql, conventions.countAs);
    this.migrations = conventions.migrations;
    this.exists = conventions.createdWith === undefined || tableExists(this.sql, conventions.createdWith);
    if (this.exists) this.migrate(); // storage written by an earlier release is brought up to date on first use
  }

  /** Runs the migrations the storage has not seen yet. */
  protected migrate(): void {
    migrate(this.sql, this.migrations, (fn) => this.ctx.storage.transactionSync(fn));
  }

  /** Sets the storage up if it is not yet (a no-op after that). */
  protected ensureStorage(): void {
    if (this.exists) return;
    this.migrate();
    this.exists = true;
  }
}

import type { Migration } from "../storage/migrations";
import type { ClockData } from "./clock-state";

export const CLOCK_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "the clock's one row: the shards' last reports and the global watermark, as JSON",
    up: (sql) => sql.exec("CREATE TABLE IF NOT EXISTS clock (id INTEGER PRIMARY KEY CHECK (id = 1), data TEXT NOT NULL)"),
  },
];

/** A clock's one row (./clock.ts stores its figures there at most once a second). */
export class ClockStore {
  constructor(private readonly sql: SqlStorage) {}

  load(): ClockData | null {
    const row = this.sql.exec<{ data: string }>("SELECT data FROM clock").toArray()[0];
    return row ? (JSON.parse(row.data) as ClockData) : null;
  }

  clear(): void {
    this.sql.exec("DELETE FROM clock");
  }

  save(data: ClockData): void {
    this.sql.exec("INSERT OR REPLACE INTO clock (id, data) VALUES (1, ?)", JSON.stringify(data));
  }
}

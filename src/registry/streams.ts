import type { RegisteredStream } from "./protocol";

/** Registry migration 1: the streams' names, each with when it was (first) registered. */
export const STREAMS_TABLE = "CREATE TABLE IF NOT EXISTS streams (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL) WITHOUT ROWID";

/** The names of the streams that exist (Durable Objects cannot be listed by name). */
export class StreamNames {
  constructor(private readonly sql: SqlStorage) {}

  /** Idempotent: a stream registered already keeps its time. */
  add(name: string): void {
    this.sql.exec("INSERT OR IGNORE INTO streams (name, registered_at) VALUES (?, ?)", name, Date.now());
  }

  remove(name: string): void {
    this.sql.exec("DELETE FROM streams WHERE name = ?", name);
  }

  /** Up to `limit` streams after `after`, by name. */
  list(after: string, limit: number): RegisteredStream[] {
    return this.sql
      .exec<{ name: string; registered_at: number }>("SELECT name, registered_at FROM streams WHERE name > ? ORDER BY name LIMIT ?", after, limit)
      .toArray()
      .map((r) => ({ name: r.name, registeredAt: r.registered_at }));
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM streams").one().n;
  }
}

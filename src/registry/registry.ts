import type { Env } from "../env";
import type { Migration } from "../storage/migrations";
import { SqliteObject } from "../storage/sqlite-object";
import { Incarnations } from "./incarnations";
import type { RegisteredStream, RegistryRpc } from "./protocol";

export type { RegisteredStream };

/** The Registry's storage layouts, oldest first (src/storage/migrations.ts). */
export const REGISTRY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "the streams' names",
    up: (sql) => sql.exec("CREATE TABLE IF NOT EXISTS streams (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL) WITHOUT ROWID"),
  },
];

/**
 * The list of streams. Durable Objects cannot be listed by name, so one
 * instance ("registry") keeps the names: every successful PUT of a stream adds
 * it (idempotent: a PUT repairs a stream that predates the registry or whose
 * registration failed), DELETE removes it. It also counts each name's
 * creations (./incarnations.ts), which outlive a DELETE.
 */
export class Registry extends SqliteObject<Env> implements RegistryRpc {
  private readonly incarnations: Incarnations;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: REGISTRY_MIGRATIONS, countAs: null });
    this.incarnations = new Incarnations(this.sql);
  }

  claimIncarnation(name: string): number {
    return this.incarnations.claim(name);
  }

  retireIncarnation(name: string, n: number): void {
    this.incarnations.retire(name, n);
  }

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

  /** For /healthz: answers when the object and its storage do. */
  ping(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM streams").one().n;
  }
}

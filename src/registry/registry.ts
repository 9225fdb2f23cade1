import type { Env } from "../env";
import type { Migration } from "../storage/migrations";
import { SqliteObject } from "../storage/sqlite-object";
import { Incarnations } from "./incarnations";
import type { RegisteredStream, RegistryRpc } from "./protocol";
import { STREAMS_TABLE, StreamNames } from "./streams";

/** The Registry's storage layouts, oldest first (src/storage/migrations.ts). */
export const REGISTRY_MIGRATIONS: readonly Migration[] = [{ version: 1, does: "the streams' names", up: (sql) => sql.exec(STREAMS_TABLE) }];

/**
 * The list of streams. Durable Objects cannot be listed by name, so one
 * instance ("registry") keeps the names: every successful PUT of a stream adds
 * it (idempotent: a PUT repairs a stream that predates the registry or whose
 * registration failed), DELETE removes it. It also counts each name's
 * creations (./incarnations.ts), which outlive a DELETE. A thin shell: the
 * names are ./streams.ts.
 */
export class Registry extends SqliteObject<Env> implements RegistryRpc {
  private readonly streams = new StreamNames(this.sql);
  private readonly incarnations = new Incarnations(this.sql);

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: REGISTRY_MIGRATIONS, countAs: null });
  }

  claimIncarnation(name: string): number {
    return this.incarnations.claim(name);
  }

  retireIncarnation(name: string, n: number): void {
    this.incarnations.retire(name, n);
  }

  add(name: string): void {
    this.streams.add(name);
  }

  remove(name: string): void {
    this.streams.remove(name);
  }

  /** Up to `limit` streams after `after`, by name. */
  list(after: string, limit: number): RegisteredStream[] {
    return this.streams.list(after, limit);
  }

  /** For /healthz: answers when the object and its storage do. */
  ping(): number {
    return this.streams.count();
  }
}

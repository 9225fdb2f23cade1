/**
 * What callers may ask the Registry (src/registry/registry.ts implements it).
 * Stubs are typed by this interface (src/env.ts), so no caller, nor the
 * bindings, imports the Durable Object's module.
 */
export interface RegisteredStream {
  name: string;
  /** when the registry first heard of it, epoch ms */
  registeredAt: number;
}

export interface RegistryRpc extends Rpc.DurableObjectBranded {
  add(name: string): void;
  remove(name: string): void;
  /** Up to `limit` streams after `after`, by name. */
  list(after: string, limit: number): RegisteredStream[];
  /** A stream named `name` is being created: its incarnation number, higher than any the name had (1 for a new name). */
  claimIncarnation(name: string): number;
  /** The stream named `name`, incarnation `n`, is being deleted: a later creation takes a higher number. */
  retireIncarnation(name: string, n: number): void;
  /** For /healthz: answers when the object and its storage do. */
  ping(): number;
}

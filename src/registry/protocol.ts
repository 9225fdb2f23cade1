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
  /** For /healthz: answers when the object and its storage do. */
  ping(): number;
}

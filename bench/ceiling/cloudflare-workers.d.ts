// bench/ is type-checked with Node's types only (tsconfig.node.json); the
// ceiling Worker needs just this much of `cloudflare:workers`.
declare module "cloudflare:workers" {
  interface SqlStorage {
    exec<T = Record<string, unknown>>(query: string, ...bindings: unknown[]): { toArray(): T[]; one(): T };
    readonly databaseSize: number;
  }
  export class DurableObject<Env = unknown> {
    protected ctx: { storage: { sql: SqlStorage } };
    protected env: Env;
    constructor(ctx: unknown, env: Env);
  }
}

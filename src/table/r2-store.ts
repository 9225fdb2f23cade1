import type { TableStore } from "./store";

/**
 * The part of an R2 bucket binding the table writer uses, spelled out so that
 * src/table needs neither `cloudflare:*` imports nor the Workers globals (the
 * Node unit tests type-check it too). `env.SINK` satisfies it.
 */
export interface R2BucketLike {
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
  put(key: string, value: Uint8Array | string, options?: { onlyIf?: { etagDoesNotMatch?: string } }): Promise<unknown>;
  list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }>;
  delete(keys: string[]): Promise<void>;
}

// R2 answers a put whose precondition fails with null instead of throwing.
const CREATE_ONLY = { onlyIf: { etagDoesNotMatch: "*" } } as const;

export function r2Store(bucket: R2BucketLike): TableStore {
  return {
    async get(key) {
      const object = await bucket.get(key);
      return object === null ? null : new Uint8Array(await object.arrayBuffer());
    },
    async put(key, body, options) {
      return (await bucket.put(key, body, options?.createOnly ? CREATE_ONLY : undefined)) !== null;
    },
    async list(prefix) {
      const keys: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await bucket.list({ prefix, cursor, limit: 1000 });
        keys.push(...page.objects.map((o) => o.key));
        cursor = page.truncated ? page.cursor : undefined;
      } while (cursor);
      return keys;
    },
    async delete(keys) {
      for (let i = 0; i < keys.length; i += 1000) await bucket.delete(keys.slice(i, i + 1000));
    },
  };
}

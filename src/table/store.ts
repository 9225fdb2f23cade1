/**
 * What the table writer needs from object storage, and no more, so it runs
 * against R2 in workerd (r2-store.ts) and an in-memory map in Node tests
 * (memory-store.ts). Keys are bucket keys (`tables/{stream}/…`), not URIs.
 */
export interface TableStore {
  /** The object's bytes, or null when there is none. */
  get(key: string): Promise<Uint8Array | null>;
  /**
   * Writes the object. With `createOnly` an existing object is left alone and
   * the answer is false: that is how a metadata commit wins or loses a race.
   */
  put(key: string, body: Uint8Array | string, options?: { createOnly?: boolean }): Promise<boolean>;
  /** Every key under the prefix, in lexicographic order. */
  list(prefix: string): Promise<string[]>;
  delete(keys: readonly string[]): Promise<void>;
}

const decoder = new TextDecoder();

export async function getText(store: TableStore, key: string): Promise<string | null> {
  const bytes = await store.get(key);
  return bytes === null ? null : decoder.decode(bytes);
}

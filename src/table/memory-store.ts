import type { TableStore } from "./store";

/** A TableStore over a Map: the unit tests' bucket, with the same create-only rule as R2. */
export function memoryStore(objects: Map<string, Uint8Array> = new Map()): TableStore & { objects: Map<string, Uint8Array> } {
  const encoder = new TextEncoder();
  return {
    objects,
    async get(key) {
      const bytes = objects.get(key);
      return bytes === undefined ? null : bytes.slice();
    },
    async put(key, body, options) {
      if (options?.createOnly && objects.has(key)) return false;
      objects.set(key, typeof body === "string" ? encoder.encode(body) : body.slice());
      return true;
    },
    async list(prefix) {
      return [...objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    },
    async delete(keys) {
      for (const k of keys) objects.delete(k);
    },
  };
}

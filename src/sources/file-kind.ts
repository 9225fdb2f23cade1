/**
 * Which input files are read, and how, by their name (DESIGN §7): the one rule
 * the service's file runs and notifications follow, and the CLI imports as it
 * is (src/cli/names.ts). No imports at all, so that plain Node runs it too.
 */

export type FileMode = "json" | "ndjson";

/** Which objects a run or a notification ingests, and how they parse: by the key's ending (before a `.gz`, which is gzip). */
export function fileMode(key: string): FileMode | null {
  let k = key.toLowerCase();
  if (k.endsWith(".gz")) k = k.slice(0, -3);
  if (k.endsWith(".json")) return "json";
  if (k.endsWith(".ndjson") || k.endsWith(".jsonl")) return "ndjson";
  return null;
}

/** A gzip-compressed input object (`.json.gz`, `.ndjson.gz`, `.jsonl.gz`): decompressed before parsing. */
export const isGzip = (key: string) => key.toLowerCase().endsWith(".gz");

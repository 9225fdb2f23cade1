/**
 * What a run does with a file it finds, by the file's name alone (pure):
 *
 * - read: the names the service's file runs read, by the service's own rule
 *   (src/sources/file-kind.ts, imported, not copied): `.json`, `.ndjson` and
 *   `.jsonl`, each optionally gzipped as `.gz`;
 * - Spark bookkeeping: what Spark leaves out when it lists a folder (a name
 *   starting with `_` or `.`, unless it holds `=` as a partition folder does;
 *   a name ending in `._COPYING_`, a copy under way): `_SUCCESS`,
 *   `.part-00000.json.crc`, `_spark_metadata/`. Skipped and listed; the run
 *   does not fail for it;
 * - data it cannot read: a JSON file compressed other than with gzip
 *   (`.json.bz2`, `.jsonl.zst`…), or a Spark or Hadoop part file of another
 *   format (`part-00000-….csv`, `.parquet`). Skipped and listed, and the run
 *   fails: rows were meant to go and did not;
 * - anything else (a README, a manifest.csv): skipped and listed; the run
 *   does not fail for it.
 */
import { fileMode, isGzip, type FileMode } from "../sources/file-kind.ts";

export type NameVerdict =
  | { kind: "read"; mode: FileMode; gzip: boolean }
  /** data: the file looks like rows this command cannot read (the run fails) */
  | { kind: "skip"; reason: string; data: boolean };

export const NOT_READ = "not .json, .ndjson or .jsonl";

/** The compressions Spark's and Hadoop's writers name; only gzip is read. */
const CODECS = new Set(["bz2", "zst", "zstd", "lz4", "snappy", "deflate", "xz", "br", "zip", "7z", "lzo", "z"]);
const JSON_THEN_SUFFIX = /\.(json|ndjson|jsonl)\.([^.]+)$/i;
/** part-00000…, and MapReduce's part-r-00000 / part-m-00000 */
const PART_FILE = /^part-(?:[rm]-)?\d{5}/i;

/** Why Spark leaves this file or folder out of a listing, or null when it does not. */
export function sparkBookkeeping(name: string): string | null {
  if (name.startsWith("_") && !name.includes("=")) return 'Spark bookkeeping: the name starts with "_"';
  if (name.startsWith(".")) return 'Spark bookkeeping: the name starts with "."';
  if (name.endsWith("._COPYING_")) return "a copy under way: the name ends in ._COPYING_";
  return null;
}

/** What a file of this name is to a run (its own name: the last part of its path). */
export function classifyName(name: string): NameVerdict {
  const mode = fileMode(name);
  if (mode !== null) return { kind: "read", mode, gzip: isGzip(name) };
  const compressed = JSON_THEN_SUFFIX.exec(name);
  if (compressed && CODECS.has(compressed[2].toLowerCase())) {
    return { kind: "skip", reason: `.${compressed[1].toLowerCase()} compressed as .${compressed[2]}: only gzip (.gz) is read`, data: true };
  }
  if (PART_FILE.test(name)) return { kind: "skip", reason: `a part file that is ${NOT_READ} (optionally .gz)`, data: true };
  return { kind: "skip", reason: NOT_READ, data: false };
}

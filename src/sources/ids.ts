/**
 * Batch ids of the sources beyond HTTP (DESIGN §7): pure, no Cloudflare
 * imports, so the unit tests pin them down.
 *
 * - An R2 object is one batch: `r2:{key}@{etag}`. A key may hold any Unicode
 *   and up to 1,024 bytes, but a batch id is 1-255 visible ASCII characters
 *   (as an Idempotency-Key); an id that would not be is replaced by
 *   `r2h:` + the SHA-256 (hex) of its UTF-8 bytes: deterministic, so every run
 *   and every notification of that object version names the same batch.
 * - A queue message without a batch id gets `q:` + the SHA-256 of the
 *   canonical JSON of `{source, rows}` (object keys sorted at every level), so
 *   a redelivery, or the same rows regrouped into another delivery, is a replay.
 */
import { sha256Hex } from "../api/body";

/** What an Idempotency-Key may be; the ids below always are. */
export const BATCH_ID_PATTERN = /^[\x21-\x7e]{1,255}$/;

const utf8 = (s: string) => new TextEncoder().encode(s);

/** R2 hands etags out unquoted (`etag`) and quoted (`httpEtag`); ids use the bare form. */
export function bareEtag(etag: string): string {
  return etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
}

export async function fileBatchId(key: string, etag: string): Promise<string> {
  const id = `r2:${key}@${bareEtag(etag)}`;
  return BATCH_ID_PATTERN.test(id) ? id : `r2h:${await sha256Hex(utf8(id))}`;
}

/** JSON with object keys sorted at every level: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The SHA-256 (hex) of a queue message's canonical content. */
export async function messageHash(source: string, rows: unknown[]): Promise<string> {
  return sha256Hex(utf8(canonicalJson({ source, rows })));
}

export const queueBatchId = (hash: string) => `q:${hash}`;
/** A queue batch's identity (what a reused batch id is checked against): its content, not its delivery. */
export const queueIdentity = (hash: string) => `queue:${hash}`;

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

/** The Content-Type that makes parseRows read a file of that mode. */
export const MODE_CONTENT_TYPE: Record<FileMode, string> = { json: "application/json", ndjson: "application/x-ndjson" };

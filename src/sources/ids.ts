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
 *   One with a batch id X gets `qid:X`.
 *
 * Each ingress owns its namespace of batch ids (see INGRESS_PREFIXES), and the
 * others are refused it, so that no producer can take an id another ingress
 * will need (a queue message naming `stripe:evt_1` would turn Stripe's genuine
 * delivery into a 422).
 */
import { sha256Hex } from "../lib/bytes";
import type { FileMode } from "./file-kind";
import { BATCH_ID_PATTERN, namespacedId } from "../ingest/batch-id-namespaces";

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
/** A queue message's own batch id, in the queue's namespace: X → `qid:X`. */
export const explicitQueueBatchId = (id: string) => namespacedId("qid:", id);
/** A queue batch's identity (what a reused batch id is checked against): its content, not its delivery. */
export const queueIdentity = (hash: string) => `queue:${hash}`;

/** The Content-Type that makes parseRows read a file of that mode. */
export const MODE_CONTENT_TYPE: Record<FileMode, string> = { json: "application/json", ndjson: "application/x-ndjson" };

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
import { sha256Hex } from "../stream/bytes";
import type { FileMode } from "./file-kind";

/** What an Idempotency-Key may be; the ids below always are. */
export const BATCH_ID_PATTERN = /^[\x21-\x7e]{1,255}$/;

const utf8 = (s: string) => new TextEncoder().encode(s);

/** R2 hands etags out unquoted (`etag`) and quoted (`httpEtag`); ids use the bare form. */
export function bareEtag(etag: string): string {
  return etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
}

/** The ingresses that name batches; "http": POST …/events with an Idempotency-Key (or a generated one). */
export type Ingress = "webhook" | "files" | "queue" | "http";

/**
 * The prefixes each ingress owns; every other id is an HTTP producer's. The
 * provider prefixes are the provider types (src/webhooks; a unit test keeps
 * them in step). Ids stored before namespaces existed keep their meaning: they
 * were already of these shapes, except explicit queue ids (now `qid:`).
 */
export const INGRESS_PREFIXES: Record<Exclude<Ingress, "http">, readonly string[]> = {
  webhook: ["stripe:", "github:", "shopify:", "standard-webhooks:"],
  files: ["r2:", "r2h:"],
  queue: ["q:", "qid:"],
};

/** The ingress whose namespace a batch id is in. */
export function ingressOf(batchId: string): Ingress {
  for (const [ingress, prefixes] of Object.entries(INGRESS_PREFIXES)) {
    if (prefixes.some((p) => batchId.startsWith(p))) return ingress as Ingress;
  }
  return "http";
}

/** Why `ingress` may not use this batch id (it is in another's namespace), or null. */
export function foreignBatchId(batchId: string, ingress: Ingress): string | null {
  const owner = ingressOf(batchId);
  if (owner === ingress) return null;
  const prefixes = Object.values(INGRESS_PREFIXES)
    .flat()
    .map((p) => `"${p}"`)
    .join(", ");
  return `batch ids starting with ${prefixes} are reserved for the ingress that makes them (${owner === "http" ? "HTTP producers" : owner}); this one is ${describeIngress(ingress)}'s`;
}

const describeIngress = (i: Ingress) => ({ webhook: "a provider webhook", files: "a file", queue: "a queue message", http: "an HTTP producer" })[i];

const HASHED = "sha256:";

/**
 * `prefix` + id, as a batch id: one that would be too long or not visible
 * ASCII becomes `prefix` + `sha256:<hex of its UTF-8>`; so does one that itself
 * starts with "sha256:", so that two ids never share a batch id.
 */
export async function namespacedId(prefix: string, id: string): Promise<string> {
  const plain = `${prefix}${id}`;
  if (BATCH_ID_PATTERN.test(plain) && !id.startsWith(HASHED)) return plain;
  return `${prefix}${HASHED}${await sha256Hex(utf8(id))}`;
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

// Which names are read, and how: in a module of its own, with no imports, for the CLI to share.
export { fileMode, isGzip, type FileMode } from "./file-kind";

/** The Content-Type that makes parseRows read a file of that mode. */
export const MODE_CONTENT_TYPE: Record<FileMode, string> = { json: "application/json", ndjson: "application/x-ndjson" };

/**
 * The namespaces of batch ids (DESIGN §7): each ingress owns its prefixes and
 * the others are refused them, so that no producer can take an id another
 * ingress will need (a queue message naming `stripe:evt_1` would turn
 * Stripe's genuine delivery into a 422). Pure, no Cloudflare imports.
 */
import { sha256Hex } from "../lib/bytes";

/** What an Idempotency-Key may be; every id an ingress makes is one. */
export const BATCH_ID_PATTERN = /^[\x21-\x7e]{1,255}$/;

const utf8 = (s: string) => new TextEncoder().encode(s);

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

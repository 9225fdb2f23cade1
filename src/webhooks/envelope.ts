import { sha256Hex } from "../api/body";
import { utf8 } from "./bytes";
import type { ProviderType, Refusal } from "./provider";
import { refuse } from "./provider";

/** A delivery's body as a JSON object (every provider sends one), or why not. */
export function jsonObject(body: Uint8Array | string): { ok: true; value: Record<string, unknown> } | Refusal {
  let text: string;
  try {
    text = typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body);
  } catch {
    return refuse("the body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return refuse(`the body is not valid JSON (${(e as Error).message})`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return refuse("the body is not a JSON object");
  return { ok: true, value: value as Record<string, unknown> };
}

/** A non-empty string field or header, or null. */
export const nonEmpty = (value: unknown): string | null => (typeof value === "string" && value.trim() !== "" ? value : null);

/** Batch ids are what Idempotency-Key accepts (src/api/ingest.ts). */
const BATCH_ID = /^[\x21-\x7e]{1,255}$/;
const HASHED = "sha256:";

/**
 * The batch id of a delivery: `stripe:evt_123`. An id that is too long or not
 * visible ASCII becomes `stripe:sha256:<hex of its UTF-8>`; so does one that
 * itself starts with "sha256:", so that two delivery ids never share a batch id.
 */
export async function batchIdFor(provider: ProviderType, deliveryId: string): Promise<string> {
  const plain = `${provider}:${deliveryId}`;
  if (BATCH_ID.test(plain) && !deliveryId.startsWith(HASHED)) return plain;
  return `${provider}:${HASHED}${await sha256Hex(utf8(deliveryId))}`;
}

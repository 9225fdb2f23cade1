import { namespacedId } from "../ingest/batch-id-namespaces";
import { parseJson } from "../lib/json";
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
  const parsed = parseJson(text);
  if (!parsed.ok) return refuse(`the body ${parsed.error}`);
  const value = parsed.value;
  if (value === null || typeof value !== "object" || Array.isArray(value)) return refuse("the body is not a JSON object");
  return { ok: true, value: value as Record<string, unknown> };
}

/** A non-empty string field or header, or null. */
export const nonEmpty = (value: unknown): string | null => (typeof value === "string" && value.trim() !== "" ? value : null);

/**
 * The batch id of a delivery: `stripe:evt_123`, `github:<hex SHA-256 of the
 * body>`. An id that is too long or not visible ASCII becomes
 * `stripe:sha256:<hex of its UTF-8>`; so does one that itself starts with
 * "sha256:", so that two delivery ids never share a batch id.
 */
export const batchIdFor = (provider: ProviderType, identity: string): Promise<string> => namespacedId(`${provider}:`, identity);

import { notConfigured, HttpError } from "../http/problem";
import { concat, toHex } from "../lib/bytes";

/**
 * Signing secrets at rest. An HMAC can't be checked against a hash, so they are
 * encrypted: AES-GCM under a key derived from the CREDENTIALS_KEY secret.
 *
 * Sealed format: base64 of `"edS2" | key id (6 bytes) | iv (12) | ciphertext`. The key id says which
 * key sealed it, so CREDENTIALS_KEY can rotate (CREDENTIALS_KEY_PREVIOUS keeps
 * opening what the old key sealed), and the associated data binds a ciphertext
 * to its stream, source and credential id, so a sealed secret copied to another
 * credential does not open. The legacy format (bare base64, no key id, no
 * associated data) still opens, and is re-sealed on use.
 */
const encoder = new TextEncoder();
const MAGIC = encoder.encode("edS2");
const KEY_ID_BYTES = 6;
export const MIN_CREDENTIALS_KEY_LENGTH = 32;

export interface SealingKeys {
  CREDENTIALS_KEY?: string;
  CREDENTIALS_KEY_PREVIOUS?: string;
}

/** Where a sealed secret belongs: the associated data it is bound to. */
export interface SealedFor {
  stream: string;
  source: string;
  id: string;
}

export const credentialsUnreadable = (detail: string) => new HttpError(503, "credentials-unreadable", "Signing secrets cannot be read", detail);

/** The configured keys, current first; a missing or short CREDENTIALS_KEY is a 503 that says why. */
export function sealingKeys(env: SealingKeys): string[] {
  const current = env.CREDENTIALS_KEY;
  if (!current) throw notConfigured("signing secrets need the CREDENTIALS_KEY secret to be set");
  const keys = [current, env.CREDENTIALS_KEY_PREVIOUS].filter((k): k is string => !!k);
  for (const k of keys) {
    if (k.length < MIN_CREDENTIALS_KEY_LENGTH) {
      throw notConfigured(`CREDENTIALS_KEY (and CREDENTIALS_KEY_PREVIOUS) must be at least ${MIN_CREDENTIALS_KEY_LENGTH} characters`);
    }
  }
  return keys;
}

async function aesKey(credentialsKey: string): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", encoder.encode(credentialsKey), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("edge-dedup"), info: encoder.encode("signing-secrets/v1") },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** A short public name for a key: which one sealed a secret, without revealing it. */
async function keyId(credentialsKey: string): Promise<Uint8Array> {
  const d = await crypto.subtle.digest("SHA-256", encoder.encode(`edge-dedup credentials key id\n${credentialsKey}`));
  return new Uint8Array(d).slice(0, KEY_ID_BYTES);
}

const associatedData = (f: SealedFor) => encoder.encode(`${f.stream}\n${f.source}\n${f.id}`);

export async function sealSecret(secret: string, env: SealingKeys, for_: SealedFor): Promise<string> {
  const [current] = sealingKeys(env);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: associatedData(for_) }, await aesKey(current), encoder.encode(secret)),
  );
  return toBase64(concat(MAGIC, await keyId(current), iv, ct));
}

/**
 * Opens a sealed secret with whichever configured key sealed it. `stale` says
 * it was sealed by the previous key or in the legacy format: re-seal it.
 */
export async function openSecret(sealed: string, env: SealingKeys, for_: SealedFor): Promise<{ secret: string; stale: boolean }> {
  const keys = sealingKeys(env);
  const raw = fromBase64(sealed);
  if (raw && startsWith(raw, MAGIC)) {
    const id = raw.slice(MAGIC.length, MAGIC.length + KEY_ID_BYTES);
    const ids = await Promise.all(keys.map(keyId));
    const at = ids.findIndex((k) => toHex(k) === toHex(id));
    if (at >= 0) {
      const secret = await decrypt(keys[at], raw.slice(MAGIC.length + KEY_ID_BYTES), associatedData(for_));
      if (secret === null) throw credentialsUnreadable("a signing secret does not open: it was altered or belongs to another credential");
      return { secret, stale: at > 0 };
    }
  }
  // The legacy format: iv | ciphertext under the current or previous key, no associated data.
  for (const key of keys) {
    const secret = raw && (await decrypt(key, raw, undefined));
    if (secret) return { secret, stale: true };
  }
  throw credentialsUnreadable(
    "a signing secret does not open with CREDENTIALS_KEY or CREDENTIALS_KEY_PREVIOUS; if CREDENTIALS_KEY was changed, set the old one as CREDENTIALS_KEY_PREVIOUS",
  );
}

async function decrypt(key: string, raw: Uint8Array, additionalData: Uint8Array | undefined): Promise<string | null> {
  try {
    const params = { name: "AES-GCM", iv: raw.slice(0, 12), ...(additionalData ? { additionalData } : {}) };
    return new TextDecoder().decode(await crypto.subtle.decrypt(params, await aesKey(key), raw.slice(12)));
  } catch {
    return null;
  }
}

const startsWith = (bytes: Uint8Array, prefix: Uint8Array) => prefix.every((b, i) => bytes[i] === b);

function fromBase64(s: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/**
 * Bytes and Web Crypto, one module for every transport and ingress (HTTP
 * ingest, webhooks, files, queues, delivery signing): hashing, hex and base64,
 * HMAC, a timing-safe compare and a batch's identity. Web Crypto only, no
 * Cloudflare imports, so they run alike in Workers and in Node (tests, scripts).
 */
const encoder = new TextEncoder();

export const utf8 = (text: string): Uint8Array => encoder.encode(text);

/** A body given as text or bytes, as bytes. */
export const bytesOf = (body: string | Uint8Array): Uint8Array => (typeof body === "string" ? utf8(body) : body);

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * HMAC keys imported once per isolate, by their bytes: a signed request was
 * an importKey per secret tried. Bounded: past HMAC_KEYS_KEPT it starts over.
 */
const HMAC_KEYS_KEPT = 256;
const hmacKeys = new Map<string, Promise<CryptoKey>>();

/** The casts are for the DOM typings (Node-side tests), which allow only ArrayBuffer-backed views; ours always are. */
export function hmacKey(key: Uint8Array): Promise<CryptoKey> {
  let id = "";
  for (let i = 0; i < key.length; i++) id += String.fromCharCode(key[i]);
  let k = hmacKeys.get(id);
  if (k === undefined) {
    if (hmacKeys.size >= HMAC_KEYS_KEPT) hmacKeys.clear();
    k = crypto.subtle.importKey("raw", key as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    hmacKeys.set(id, k);
    k.catch(() => hmacKeys.delete(id)); // a failed import is not kept
  }
  return k;
}

export async function hmacSha256(key: Uint8Array, message: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(key), message as Uint8Array<ArrayBuffer>));
}

/**
 * Compares in time that depends only on the length, which is public (a MAC's
 * length is fixed). crypto.subtle.timingSafeEqual exists in Workers, not Node.
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Hex (either case) → bytes, or null if it is not whole bytes of hex. */
export function fromHex(text: string): Uint8Array | null {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(text)) return null;
  return Uint8Array.from(text.match(/../g)!, (b) => parseInt(b, 16));
}

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Standard base64 (padding optional, as atob allows) → bytes, or null. */
export function fromBase64(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  // The cast is for the DOM typings (Node-side tests of src/webhooks), which allow only ArrayBuffer-backed views; ours always are.
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)));
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

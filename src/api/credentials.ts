import { sha256Hex, toHex } from "./body";
import { unauthorized } from "./problem";

/**
 * Per-source ingest credentials. Bearer tokens are stored only as SHA-256
 * hashes. Signing secrets must be usable to check an HMAC, so they are stored
 * encrypted (AES-GCM, key derived from the CREDENTIALS_KEY secret) and never
 * returned after creation.
 */
const encoder = new TextEncoder();

export type CredentialType = "token" | "hmac";

export interface StoredCredential {
  id: string;
  source: string;
  type: CredentialType;
  label: string | null;
  createdAt: number;
  /** token: hex SHA-256 of the token; hmac: base64 iv|ciphertext of the secret */
  material: string;
}

/** How far a signature's timestamp may be from now, either way. */
export const SIGNATURE_TOLERANCE_S = 300;

export function newSecret(type: CredentialType): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `${type === "token" ? "edt" : "eds"}_${base64url(bytes)}`;
}

export async function hashToken(token: string): Promise<string> {
  return sha256Hex(encoder.encode(token));
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

export async function sealSecret(secret: string, credentialsKey: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await aesKey(credentialsKey), encoder.encode(secret)));
  const out = new Uint8Array(iv.length + ct.length);
  out.set(iv);
  out.set(ct, iv.length);
  return btoa(String.fromCharCode(...out));
}

export async function openSecret(sealed: string, credentialsKey: string): Promise<string> {
  const raw = Uint8Array.from(atob(sealed), (c) => c.charCodeAt(0));
  const pt = await crypto.subtle.decrypt({ name: "AES-GCM", iv: raw.slice(0, 12) }, await aesKey(credentialsKey), raw.slice(12));
  return new TextDecoder().decode(pt);
}

/** `X-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]` → its parts, or a 401. */
export function parseSignature(header: string): { t: number; v1: string[] } {
  let t = NaN;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const [k, v] = part.trim().split("=", 2);
    if (k === "t") t = Number(v);
    else if (k === "v1" && v) v1.push(v.toLowerCase());
  }
  if (!Number.isInteger(t) || v1.length === 0) throw unauthorized("X-Signature must look like t=<unix seconds>,v1=<hex HMAC-SHA256>");
  return { t, v1 };
}

/** HMAC-SHA256(secret, `${t}.${body}`): what a signature's v1 carries, in hex. */
async function signatureMac(secret: string, t: number, body: Uint8Array): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const prefix = encoder.encode(`${t}.`);
  const msg = new Uint8Array(prefix.length + body.length);
  msg.set(prefix);
  msg.set(body, prefix.length);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, msg));
}

export function withinReplayWindow(t: number, nowMs: number): boolean {
  return Math.abs(nowMs / 1000 - t) <= SIGNATURE_TOLERANCE_S;
}

/**
 * Checks the signature's v1 values against the body, in constant time, and
 * that t is within the replay window.
 */
export async function verifySignature(secret: string, sig: { t: number; v1: string[] }, body: Uint8Array, nowMs: number): Promise<boolean> {
  if (!withinReplayWindow(sig.t, nowMs)) return false;
  const expected = await signatureMac(secret, sig.t, body);
  let ok = false;
  for (const v of sig.v1) {
    const given = fromHex(v);
    if (given && given.length === expected.length && crypto.subtle.timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}

/** What a producer runs to sign a body (also used by the tests). */
export async function signBody(secret: string, body: string | Uint8Array, t: number): Promise<string> {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  return `t=${t},v1=${toHex(await signatureMac(secret, t, bytes))}`;
}

function fromHex(s: string): Uint8Array | null {
  if (!/^(?:[0-9a-f]{2})+$/.test(s)) return null;
  return Uint8Array.from(s.match(/../g)!, (b) => parseInt(b, 16));
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

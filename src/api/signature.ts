import { hmacSha256, toHex } from "../lib/bytes";
import { unauthorized } from "../http/problem";

/**
 * `X-Signature`: HMAC-SHA256 with a source's signing secret.
 *
 * - v2 (current) signs the request, not just its body:
 *   `v2\n{t}\n{stream}\n{source}\n{batch id}\n{media type}\n{body}`, so a captured
 *   signature can't be re-sent to another stream or source, under another
 *   Idempotency-Key, or with another Content-Type (which would change how the
 *   body parses).
 * - v1 (deprecated) signs `{t}.{body}` only; still accepted unless
 *   ACCEPT_SIGNATURE_V1 is "false".
 *
 * Either way `t` (unix seconds) must be within SIGNATURE_TOLERANCE_S of now,
 * on both sides.
 */
const encoder = new TextEncoder();

export const SIGNATURE_TOLERANCE_S = 300;

export interface ParsedSignature {
  t: number;
  v1: string[];
  v2: string[];
}

/** What a v2 signature binds besides the body. */
export interface SignedRequest {
  stream: string;
  source: string;
  batchId: string;
  contentType: string | null;
}

/** `t=<unix seconds>,v2=<hex>[,v1=<hex>…]` → its parts, or a 401. */
export function parseSignature(header: string): ParsedSignature {
  let t = NaN;
  const sig: ParsedSignature = { t, v1: [], v2: [] };
  for (const part of header.split(",")) {
    const [k, v] = part.trim().split("=", 2);
    if (k === "t") t = Number(v);
    else if ((k === "v1" || k === "v2") && v) sig[k].push(v.toLowerCase());
  }
  if (!Number.isInteger(t) || sig.v1.length + sig.v2.length === 0) {
    throw unauthorized("X-Signature must look like t=<unix seconds>,v2=<hex HMAC-SHA256>");
  }
  return { ...sig, t };
}

export function withinReplayWindow(t: number, nowMs: number): boolean {
  return Math.abs(nowMs / 1000 - t) <= SIGNATURE_TOLERANCE_S;
}

/** The media type a v2 signature binds: the Content-Type without parameters, lowercased. */
export function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

function signedText(version: "v1" | "v2", t: number, body: Uint8Array, bound?: SignedRequest): Uint8Array {
  const prefix = version === "v1" ? `${t}.` : `v2\n${t}\n${bound!.stream}\n${bound!.source}\n${bound!.batchId}\n${mediaType(bound!.contentType)}\n`;
  const head = encoder.encode(prefix);
  const msg = new Uint8Array(head.length + body.length);
  msg.set(head);
  msg.set(body, head.length);
  return msg;
}

async function mac(secret: string, text: Uint8Array): Promise<Uint8Array> {
  return hmacSha256(encoder.encode(secret), text);
}

/** Equal-length byte arrays compared without an early exit (portable: producers' Node code signs with this module too). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * Which version of the signature matches, in constant time per value, or null.
 * When the header carries a v2 value only v2 counts: a v1 value beside it must
 * not open the looser check.
 */
export async function verifySignature(
  secret: string,
  sig: ParsedSignature,
  body: Uint8Array,
  nowMs: number,
  bound: SignedRequest,
  acceptV1: boolean,
): Promise<"v1" | "v2" | null> {
  if (!withinReplayWindow(sig.t, nowMs)) return null;
  const version = sig.v2.length > 0 ? "v2" : "v1";
  if (version === "v1" && !acceptV1) return null;
  const expected = await mac(secret, signedText(version, sig.t, body, bound));
  let ok = false;
  for (const v of sig[version]) {
    const given = fromHex(v);
    if (given && constantTimeEqual(given, expected)) ok = true;
  }
  return ok ? version : null;
}

/** What a producer runs to sign a request (v2). */
export async function signRequest(secret: string, body: string | Uint8Array, t: number, bound: SignedRequest): Promise<string> {
  return `t=${t},v2=${toHex(await mac(secret, signedText("v2", t, bytesOf(body), bound)))}`;
}

/** The deprecated v1 signature of a body alone. */
export async function signBody(secret: string, body: string | Uint8Array, t: number): Promise<string> {
  return `t=${t},v1=${toHex(await mac(secret, signedText("v1", t, bytesOf(body))))}`;
}

const bytesOf = (body: string | Uint8Array) => (typeof body === "string" ? encoder.encode(body) : body);

function fromHex(s: string): Uint8Array | null {
  if (!/^(?:[0-9a-f]{2})+$/.test(s)) return null;
  return Uint8Array.from(s.match(/../g)!, (b) => parseInt(b, 16));
}

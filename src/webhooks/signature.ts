import { constantTimeEqual, hmacSha256, utf8 } from "../lib/bytes";
import { refuse, refuseStale, type PrecheckResult, type Provider, type Refusal, type VerifyResult } from "./provider";

/** Stripe's and Standard Webhooks' replay window, each way (their libraries use 300 s). */
export const TOLERANCE_S = 300;

/** A provider's signature headers, parsed: no body needed yet. */
export interface Signed {
  /** the signed timestamp, unix seconds, where the scheme has one */
  t: number | null;
  /** the MACs offered (several while the sender rolls its secret) */
  macs: Uint8Array[];
  /** the bytes the MACs cover */
  signedText(body: Uint8Array): Uint8Array;
}

/** A provider's HMAC-SHA256 scheme: which header, how it parses, how a secret becomes the key. */
export interface Scheme {
  header: string;
  /** where the signed timestamp is, for messages: "Stripe-Signature t" */
  timestampLabel?: string;
  parse(headers: Headers): Signed | Refusal;
  key(secret: string): Uint8Array | null;
}

/** The key of schemes that use the secret's text as it is (Stripe, GitHub, Shopify); an empty key cannot sign. */
export const textKey = (secret: string): Uint8Array | null => (secret === "" ? null : utf8(secret));
export const textSecretProblem = (secret: string): string | null => (secret === "" ? "the secret is empty" : null);

const isRefusal = (r: Signed | Refusal): r is Refusal => "ok" in r;

/**
 * Whether a signed timestamp is within the window. Whole seconds of now, as
 * the providers' own libraries count, so that the edges agree with theirs.
 */
function fresh(label: string, t: number, nowMs: number): PrecheckResult {
  const age = Math.floor(nowMs / 1000) - t;
  if (age > TOLERANCE_S) return refuseStale(`${label}=${t} is ${age} s old; at most ${TOLERANCE_S} s are accepted (replay protection)`);
  if (-age > TOLERANCE_S) return refuseStale(`${label}=${t} is ${-age} s in the future; at most ${TOLERANCE_S} s of clock skew are accepted`);
  return { ok: true };
}

/** The Provider members that follow from a scheme: timestamp, precheck and verify. */
export function checks(scheme: Scheme): Pick<Provider, "signatureHeader" | "timestamp" | "precheck" | "verify"> {
  const precheck = (headers: Headers, nowMs: number): Signed | Refusal => {
    const signed = scheme.parse(headers);
    if (isRefusal(signed) || signed.t === null) return signed;
    const window = fresh(scheme.timestampLabel ?? scheme.header, signed.t, nowMs);
    return window.ok ? signed : window;
  };
  return {
    signatureHeader: scheme.header,
    timestamp: (headers) => {
      const signed = scheme.parse(headers);
      return isRefusal(signed) ? null : signed.t;
    },
    precheck: (headers, nowMs) => {
      const r = precheck(headers, nowMs);
      return isRefusal(r) ? r : { ok: true };
    },
    verify: async (headers, body, secrets, nowMs) => {
      const signed = precheck(headers, nowMs);
      if (isRefusal(signed)) return signed;
      return matchSecret(scheme, secrets, signed.signedText(body), signed.macs);
    },
  };
}

/**
 * The index of the first secret under which one of the offered MACs is the
 * HMAC-SHA256 of the signed text. Every MAC is compared, in constant time.
 */
async function matchSecret(scheme: Scheme, secrets: string[], text: Uint8Array, macs: Uint8Array[]): Promise<VerifyResult> {
  if (secrets.length === 0) return refuse("no signing secret is configured for this source");
  for (let i = 0; i < secrets.length; i++) {
    const key = scheme.key(secrets[i]);
    if (key === null) continue;
    const expected = await hmacSha256(key, text);
    let match = false;
    for (const mac of macs) match = constantTimeEqual(mac, expected) || match;
    if (match) return { ok: true, secretIndex: i };
  }
  const which = secrets.length === 1 ? "the source's secret" : `any of the source's ${secrets.length} secrets`;
  return refuse(`the ${scheme.header} signature does not match this body under ${which}; sign the raw body exactly as sent`);
}

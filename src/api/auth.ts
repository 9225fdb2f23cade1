import { sha256Utf8 } from "../lib/sha256";
import { forbidden, notConfigured, unauthorized } from "../http/problem";

/**
 * A secret's SHA-256, synchronous (src/lib/sha256.ts): every request checks
 * its token, and a Web Crypto digest per side was two promises per check.
 */
const digestOf = (s: string): Int32Array => Int32Array.from(sha256Utf8(s));

/** The expected secrets' digests, per isolate (the admin tokens: one or two). */
const expectedDigests = new Map<string, Int32Array>();
function expectedDigest(secret: string): Int32Array {
  let d = expectedDigests.get(secret);
  if (d === undefined) {
    if (expectedDigests.size >= 8) expectedDigests.clear(); // rotated secrets don't pile up
    expectedDigests.set(secret, (d = digestOf(secret)));
  }
  return d;
}

/** Constant-time comparison: both sides are hashed first so lengths leak nothing, and the digests are compared word by word without stopping early. */
export async function sameSecret(given: string, expected: string): Promise<boolean> {
  const a = digestOf(given);
  const b = expectedDigest(expected);
  let diff = 0;
  for (let i = 0; i < 8; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export function bearerToken(header: string | undefined | null): string | null {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m ? m[1] : null;
}

/**
 * Whether `token` is the admin token. ADMIN_TOKEN_PREVIOUS is accepted too, so
 * the admin token can be rotated without downtime (set the new one, move the
 * callers, drop the previous).
 */
export async function isAdminToken(token: string, env: { ADMIN_TOKEN?: string; ADMIN_TOKEN_PREVIOUS?: string }): Promise<boolean> {
  if (!env.ADMIN_TOKEN) {
    throw notConfigured("the ADMIN_TOKEN secret is not set; nothing is open without it");
  }
  const checks = [env.ADMIN_TOKEN, env.ADMIN_TOKEN_PREVIOUS].filter((t): t is string => !!t).map((t) => sameSecret(token, t));
  return (await Promise.all(checks)).some(Boolean);
}

/** Admin calls need the admin token. */
export async function requireAdmin(authorization: string | undefined, env: { ADMIN_TOKEN?: string; ADMIN_TOKEN_PREVIOUS?: string }): Promise<void> {
  const token = bearerToken(authorization);
  if (token === null) {
    await isAdminToken("", env); // a missing ADMIN_TOKEN is a 503 before anything else
    throw unauthorized("send Authorization: Bearer <token>");
  }
  if (!(await isAdminToken(token, env))) throw forbidden("the token is not valid for this call");
}

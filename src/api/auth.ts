import { forbidden, notConfigured, unauthorized } from "./problem";

const encoder = new TextEncoder();

async function digest(s: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", encoder.encode(s));
}

/** Constant-time comparison: both sides are hashed first so lengths leak nothing. */
export async function sameSecret(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([digest(given), digest(expected)]);
  return crypto.subtle.timingSafeEqual(a, b);
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

import { HttpError } from "./problem";

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

/** Admin calls (and, until per-source credentials exist, ingest) need ADMIN_TOKEN. */
export async function requireAdmin(authorization: string | undefined, adminToken: string | undefined): Promise<void> {
  if (!adminToken) {
    throw new HttpError(503, "not-configured", "Service not configured", "the ADMIN_TOKEN secret is not set; nothing is open without it");
  }
  const token = bearerToken(authorization);
  if (token === null) {
    throw new HttpError(401, "unauthorized", "Unauthorized", "send Authorization: Bearer <token>", {}, { "www-authenticate": 'Bearer realm="edge-dedup"' });
  }
  if (!(await sameSecret(token, adminToken))) {
    throw new HttpError(403, "forbidden", "Forbidden", "the token is not valid for this call");
  }
}

import { z } from "zod";
import { isProviderType, PROVIDERS } from "../webhooks";
import { sha256Hex } from "../lib/bytes";
import type { ProviderType } from "../webhooks";

/**
 * Per-source ingest credentials. Bearer tokens are stored only as SHA-256
 * hashes; signing secrets are sealed (src/api/sealing.ts) and never returned
 * after creation.
 */
const encoder = new TextEncoder();

/** token and hmac sign our API; a provider type verifies that provider's webhooks (DESIGN §6). */
export type CredentialType = "token" | "hmac" | ProviderType;

export const CREDENTIAL_TYPES = ["token", "hmac", "stripe", "github", "shopify", "standard-webhooks"] as const satisfies readonly CredentialType[];

export interface StoredCredential {
  id: string;
  source: string;
  type: CredentialType;
  label: string | null;
  createdAt: number;
  /** token: hex SHA-256 of the token; hmac and provider types: the sealed secret */
  material: string;
}

export function newSecret(type: "token" | "hmac"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `${type === "token" ? "edt" : "eds"}_${base64url(bytes)}`;
}

export async function hashToken(token: string): Promise<string> {
  return sha256Hex(encoder.encode(token));
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

// Per-source ingest credentials: a bearer token, an HMAC signing secret or a
// webhook provider's signing secret, shown once at creation and never again.
// Several may be live at once, for rotation.
export const credentialBody = z
  .strictObject({
    type: z.enum(CREDENTIAL_TYPES),
    secret: z.string().max(256).optional(),
    label: z.string().max(200).optional(),
  })
  .superRefine(({ type, secret }, ctx) => {
    const problem = isProviderType(type)
      ? secret === undefined
        ? `a ${type} credential needs the provider's signing secret`
        : PROVIDERS[type].secretProblem(secret)
      : secret !== undefined && secret.length < 24
        ? "at least 24 characters"
        : null;
    if (problem) ctx.addIssue({ code: "custom", path: ["secret"], message: problem });
  });

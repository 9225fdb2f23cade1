/**
 * Which of a destination's signing secrets sign, and what a rotation keeps.
 * Every live secret signs each message (`webhook-signature` carries one
 * `v1,…` per secret), so they are capped: the current one and at most two
 * previous ones still within their overlap. A rotation past the cap retires
 * the oldest at once rather than being refused: a rotation is often urgent (a
 * leaked secret), and the receiver deploys the newest anyway. Pure.
 */
export const MAX_SIGNING_SECRETS = 3;

/** One signing secret as a destination stores it (sealed under CREDENTIALS_KEY, src/api/sealing.ts). */
export interface SealedSecret {
  id: string;
  sealed: string;
  createdAt: number;
  /** null: current; otherwise it stops signing then (a rotation's overlap) */
  expiresAt: number | null;
}

/** The secrets that sign at `now`, newest first, at most MAX_SIGNING_SECRETS (also for rows stored before the cap). */
export function signingSecrets(secrets: readonly SealedSecret[], now: number): SealedSecret[] {
  return secrets
    .filter((s) => s.expiresAt === null || s.expiresAt > now)
    .sort((a, b) => b.createdAt - a.createdAt)
    .slice(0, MAX_SIGNING_SECRETS);
}

/** The secrets after a rotation to `fresh`: the old ones sign for `overlapMs` more at most, the oldest beyond the cap not at all. */
export function afterRotation(secrets: readonly SealedSecret[], fresh: SealedSecret, now: number, overlapMs: number): SealedSecret[] {
  const old = signingSecrets(secrets, now)
    .map((s) => ({ ...s, expiresAt: Math.min(s.expiresAt ?? Infinity, now + overlapMs) }))
    .filter((s) => s.expiresAt > now);
  return [fresh, ...old].slice(0, MAX_SIGNING_SECRETS);
}

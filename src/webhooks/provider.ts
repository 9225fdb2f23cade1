/**
 * What every provider module implements: its own signature scheme, checked
 * before anything else, and the one envelope row a delivery becomes
 * (DESIGN §6). Pure: no Cloudflare imports, no I/O.
 */
import type { ProviderType } from "../stream/provider-volatile";

export type { ProviderType };

export type Refusal = { ok: false; reason: string };
export type VerifyResult = { ok: true; secretIndex: number } | Refusal;
export type PrecheckResult = { ok: true } | Refusal;

/** The row a delivery becomes; a webhook stream has `"key": ["id"], "eventTime": "time"`. */
export interface EnvelopeRow {
  /** signed: the provider's signed event id, else the SHA-256 (hex) of the signed body */
  id: string;
  /** epoch ms; never later than the arrival time where the scheme does not sign it */
  time: number;
  type: string | null;
  /** the provider's delivery id header where the scheme signs the body only: kept for reference, not verified */
  deliveryId?: string;
  payload: Record<string, unknown>;
}

/**
 * `identity` is what the batch id is derived from (batchIdFor): signed bytes
 * only (DESIGN §6), so that a redelivery replays and a captured delivery
 * re-sent with other headers is a replay too.
 */
export type EnvelopeResult = { ok: true; row: EnvelopeRow; identity: string } | Refusal;

export interface Provider {
  readonly type: ProviderType;
  /** The header that carries the signature, for messages and docs. */
  readonly signatureHeader: string;
  /** The signed timestamp (epoch seconds) where the scheme has one in a header, else null. */
  timestamp(headers: Headers): number | null;
  /** Refuses a missing or malformed signature, or a stale timestamp, before the body is read. */
  precheck(headers: Headers, nowMs: number): PrecheckResult;
  /** The full check: precheck, then the signature against each secret (several are live during rotation). */
  verify(headers: Headers, body: Uint8Array, secrets: string[], nowMs: number): Promise<VerifyResult>;
  /**
   * Whose bytes say which event a delivery is: "signed-id" (the scheme signs
   * an event id) or "body" (it signs the body alone: the id is the body's hash).
   */
  readonly identity: "signed-id" | "body";
  /** The envelope row of a verified delivery; `bodySha256`: the hex SHA-256 of `body`. */
  envelope(headers: Headers, body: Uint8Array, nowMs: number, bodySha256: string): EnvelopeResult;
  /** Why a secret cannot be used with this provider, or null: for checking a credential when it is stored. */
  secretProblem(secret: string): string | null;
}

export const refuse = (reason: string): Refusal => ({ ok: false, reason });

/** Refusals whose signed timestamp is outside the replay window: counted apart (src/webhooks/tally.ts), with the shape of any other. */
const stale = new WeakSet<Refusal>();
export const refuseStale = (reason: string): Refusal => {
  const r = refuse(reason);
  stale.add(r);
  return r;
};
export const isStale = (r: PrecheckResult): boolean => !r.ok && stale.has(r);

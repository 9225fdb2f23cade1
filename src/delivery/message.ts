import { signStandardWebhooks } from "../webhooks/standard-webhooks";
import { toBase64 } from "../lib/bytes";

/**
 * One output row as a Standard Webhooks message: the id is the row's place in
 * the output (`{stream}.{seq}.{index}`, see webhookId), the same on every attempt and replay,
 * so the handler can be idempotent on it; the body's timestamp is the commit
 * time, so the body is the same on every attempt too. Only webhook-timestamp
 * (the send time, which the receiver checks for freshness) changes.
 */
export const MESSAGE_TYPE = "row.emitted";

/**
 * `{stream}.{seq}.{index}` for a stream's first incarnation; a stream deleted
 * and created again under the same name counts on (src/registry/incarnations.ts)
 * and its ids are `{stream}~{n}.{seq}.{index}`, so no id is ever another row's.
 * `~` is never part of a stream name; seq and index are the last two parts.
 */
export const webhookId = (stream: string, seq: number, index: number, incarnation = 1) =>
  `${stream}${incarnation > 1 ? `~${incarnation}` : ""}.${seq}.${index}`;

/**
 * The place a webhook-id names: `{stream}[~n].{seq}.{index}` → {incarnation, seq, index}, or null when it is not one of
 * `stream`'s ids (another stream's, or malformed).
 */
export function parseWebhookId(stream: string, id: string): { incarnation: number; seq: number; index: number } | null {
  const m = /^(.*)\.(\d+)\.(\d+)$/.exec(id);
  if (!m) return null;
  const named = /^(.*?)(?:~(\d+))?$/.exec(m[1])!;
  if (named[1] !== stream) return null;
  const incarnation = named[2] === undefined ? 1 : Number(named[2]);
  if (incarnation < 2 && named[2] !== undefined) return null;
  return { incarnation, seq: Number(m[2]), index: Number(m[3]) };
}

export function messageBody(row: unknown, committedAt: number): string {
  return JSON.stringify({ type: MESSAGE_TYPE, timestamp: new Date(committedAt).toISOString(), data: row });
}

/** A new signing secret, `whsec_` + base64 of 24 random bytes (as Svix issues them). */
export function newSigningSecret(): string {
  return `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(24)))}`;
}

/**
 * The three headers of one attempt. Every secret in `secrets` signs (the new
 * one and, while a rotation overlaps, the old one), space-separated as the
 * spec allows, so a receiver holding either verifies.
 */
export async function signedHeaders(secrets: readonly string[], id: string, nowMs: number, body: string): Promise<Record<string, string>> {
  const t = Math.floor(nowMs / 1000);
  const signatures = await Promise.all(secrets.map((s) => signStandardWebhooks(s, id, t, body)));
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(t),
    "webhook-signature": signatures.join(" "),
    "user-agent": "edge-dedup-delivery/1",
  };
}

/** A queue destination's message: the same id, the row and where it came from. */
export function queueMessage(stream: string, seq: number, index: number, row: unknown, committedAt: number, incarnation = 1) {
  return { id: webhookId(stream, seq, index, incarnation), type: MESSAGE_TYPE, stream, seq, index, committedAt, row };
}

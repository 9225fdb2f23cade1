import { bytesOf, fromBase64, hmacSha256, toBase64, utf8 } from "../lib/bytes";
import { jsonObject, nonEmpty } from "./envelope";
import { refuse, type EnvelopeResult, type Provider, type Refusal } from "./provider";
import { checks, textKey, textSecretProblem, type Scheme, type Signed } from "./signature";
import { parseIsoTimestamp } from "../stream/schema";

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the body keyed by
 * the app's client secret (UTF-8). Only the body is signed: the event id, the
 * topic and the time are headers anyone who captured a delivery can change, so
 * the row id and the batch id are the body's SHA-256, and the time is never
 * later than the arrival.
 */
const HEADER = "X-Shopify-Hmac-Sha256";

function parse(headers: Headers): Signed | Refusal {
  const value = headers.get(HEADER);
  if (value === null) return refuse(`missing ${HEADER} header`);
  const mac = fromBase64(value.trim());
  if (mac?.length !== 32) return refuse(`${HEADER} must be the base64 of a 32-byte HMAC-SHA256`);
  return { t: null, macs: [mac], signedText: (body) => body };
}

const scheme: Scheme = { header: HEADER, parse, key: textKey };

/**
 * id = the SHA-256 of the signed body (Shopify's retries send the same bytes);
 * deliveryId = X-Shopify-Event-Id, else the older X-Shopify-Webhook-Id, and
 * type = X-Shopify-Topic, unverified; time = X-Shopify-Triggered-At, but never
 * later than the arrival (an unsigned header must not move the watermark
 * ahead), else the arrival. A Triggered-At that is present but not ISO-8601
 * is refused rather than silently replaced by the arrival time.
 */
function envelope(headers: Headers, body: Uint8Array, nowMs: number, bodySha256: string): EnvelopeResult {
  const deliveryId = nonEmpty(headers.get("X-Shopify-Event-Id")) ?? nonEmpty(headers.get("X-Shopify-Webhook-Id"));
  if (deliveryId === null) return refuse("missing X-Shopify-Event-Id and X-Shopify-Webhook-Id headers");
  const triggeredAt = headers.get("X-Shopify-Triggered-At");
  const time = triggeredAt === null ? nowMs : parseIsoTimestamp(triggeredAt);
  if (time === null) return refuse(`X-Shopify-Triggered-At is not an ISO-8601 time: ${JSON.stringify(triggeredAt)}`);
  const json = jsonObject(body);
  if (!json.ok) return json;
  const row = { id: bodySha256, time: Math.min(time, nowMs), type: nonEmpty(headers.get("X-Shopify-Topic")), deliveryId, payload: json.value };
  return { ok: true, row, identity: bodySha256 };
}

/** The X-Shopify-Hmac-Sha256 value Shopify would send for `body`: for tests, scripts and docs. */
export async function signShopify(secret: string, body: string | Uint8Array): Promise<string> {
  return toBase64(await hmacSha256(utf8(secret), bytesOf(body)));
}

export const shopify: Provider = {
  type: "shopify",
  identity: "body",
  ...checks(scheme),
  envelope,
  secretProblem: textSecretProblem,
};

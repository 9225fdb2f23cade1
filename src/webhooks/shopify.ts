import { bytesOf, fromBase64, hmacSha256, toBase64, utf8 } from "./bytes";
import { jsonObject, nonEmpty } from "./envelope";
import { refuse, type EnvelopeResult, type Provider, type Refusal } from "./provider";
import { checks, textKey, textSecretProblem, type Scheme, type Signed } from "./signature";
import { parseIsoTimestamp } from "../stream/schema";

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the body keyed by
 * the app's client secret (UTF-8). No timestamp is signed; the event id makes
 * a replay change nothing.
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
 * id = X-Shopify-Event-Id (one per event, shared by its retries), else the older
 * X-Shopify-Webhook-Id; time = X-Shopify-Triggered-At, else arrival; type =
 * X-Shopify-Topic. A Triggered-At that is present but not ISO-8601 is refused
 * rather than silently replaced by the arrival time.
 */
function envelope(headers: Headers, body: Uint8Array, nowMs: number): EnvelopeResult {
  const id = nonEmpty(headers.get("X-Shopify-Event-Id")) ?? nonEmpty(headers.get("X-Shopify-Webhook-Id"));
  if (id === null) return refuse("missing X-Shopify-Event-Id and X-Shopify-Webhook-Id headers");
  const triggeredAt = headers.get("X-Shopify-Triggered-At");
  const time = triggeredAt === null ? nowMs : parseIsoTimestamp(triggeredAt);
  if (time === null) return refuse(`X-Shopify-Triggered-At is not an ISO-8601 time: ${JSON.stringify(triggeredAt)}`);
  const json = jsonObject(body);
  if (!json.ok) return json;
  return { ok: true, row: { id, time, type: nonEmpty(headers.get("X-Shopify-Topic")), payload: json.value }, deliveryId: id };
}

/** The X-Shopify-Hmac-Sha256 value Shopify would send for `body`: for tests, scripts and docs. */
export async function signShopify(secret: string, body: string | Uint8Array): Promise<string> {
  return toBase64(await hmacSha256(utf8(secret), bytesOf(body)));
}

export const shopify: Provider = {
  type: "shopify",
  ...checks(scheme),
  envelope,
  secretProblem: textSecretProblem,
};

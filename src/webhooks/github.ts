import { bytesOf, fromHex, hmacSha256, toHex, utf8 } from "../lib/bytes";
import { jsonObject, nonEmpty } from "./envelope";
import { refuse, type EnvelopeResult, type Provider, type Refusal } from "./provider";
import { checks, textKey, textSecretProblem, type Scheme, type Signed } from "./signature";

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the body keyed
 * by the secret's UTF-8. Only the body is signed (no timestamp, no delivery
 * id), so a captured delivery can be re-sent with any headers: the row id and
 * the batch id are the body's SHA-256, which makes such a replay change nothing.
 * The legacy SHA-1 `X-Hub-Signature` is not accepted.
 */
const HEADER = "X-Hub-Signature-256";

function parse(headers: Headers): Signed | Refusal {
  const value = headers.get(HEADER);
  if (value === null) {
    const sha1 = headers.has("X-Hub-Signature") ? " (the SHA-1 X-Hub-Signature is not accepted)" : "";
    return refuse(`missing ${HEADER} header${sha1}`);
  }
  const mac = value.startsWith("sha256=") ? fromHex(value.slice(7).trim()) : null;
  if (mac?.length !== 32) return refuse(`${HEADER} must look like sha256=<64 hex digits>`);
  return { t: null, macs: [mac], signedText: (body) => body };
}

const scheme: Scheme = { header: HEADER, parse, key: textKey };

/**
 * id = the SHA-256 of the signed body (a redelivery sends the same bytes);
 * deliveryId = X-GitHub-Delivery and type = X-GitHub-Event, unverified;
 * time = arrival: GitHub payloads carry no common event time. A webhook set to
 * application/x-www-form-urlencoded sends the JSON in the `payload` field.
 */
function envelope(headers: Headers, body: Uint8Array, nowMs: number, bodySha256: string): EnvelopeResult {
  const deliveryId = nonEmpty(headers.get("X-GitHub-Delivery"));
  if (deliveryId === null) return refuse("missing X-GitHub-Delivery header");
  const form = /^application\/x-www-form-urlencoded\b/i.test(headers.get("content-type") ?? "");
  const json = jsonObject(form ? (new URLSearchParams(new TextDecoder().decode(body)).get("payload") ?? "") : body);
  if (!json.ok) return json;
  const row = { id: bodySha256, time: nowMs, type: nonEmpty(headers.get("X-GitHub-Event")), deliveryId, payload: json.value };
  return { ok: true, row, identity: bodySha256 };
}

/** The X-Hub-Signature-256 value GitHub would send for `body`: for tests, scripts and docs. */
export async function signGithub(secret: string, body: string | Uint8Array): Promise<string> {
  return `sha256=${toHex(await hmacSha256(utf8(secret), bytesOf(body)))}`;
}

export const github: Provider = {
  type: "github",
  identity: "body",
  ...checks(scheme),
  envelope,
  secretProblem: textSecretProblem,
};

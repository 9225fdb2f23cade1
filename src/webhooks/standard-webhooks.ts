import { bytesOf, concat, fromBase64, hmacSha256, toBase64, utf8 } from "../lib/bytes";
import { jsonObject, nonEmpty } from "./envelope";
import { refuse, type EnvelopeResult, type Provider, type Refusal } from "./provider";
import { checks, type Scheme, type Signed } from "./signature";
import { MIN_PLAUSIBLE_MS, parseIsoTimestamp } from "../stream/schema";

/**
 * Standard Webhooks (Svix and others): `webhook-id`, `webhook-timestamp` (unix
 * s) and `webhook-signature: v1,<base64>[ v1,<base64>…]`, HMAC-SHA256 of
 * `${id}.${timestamp}.${body}` keyed by the base64-decoded part of the
 * `whsec_…` secret. Other versions (v1a, asymmetric) are ignored, as the
 * reference library does. Svix's branded `svix-*` headers are read when the
 * `webhook-*` ones are absent.
 */
const HEADER = "webhook-signature";

const header = (headers: Headers, name: "id" | "timestamp" | "signature") => headers.get(`webhook-${name}`) ?? headers.get(`svix-${name}`);

function parse(headers: Headers): Signed | Refusal {
  const id = header(headers, "id");
  const timestamp = header(headers, "timestamp");
  const signature = header(headers, "signature");
  const missing = [id === null && "webhook-id", timestamp === null && "webhook-timestamp", signature === null && HEADER].filter(Boolean);
  if (missing.length > 0) return refuse(`missing ${missing.join(", ")} header${missing.length > 1 ? "s" : ""}`);
  if (!/^\d{1,12}$/.test(timestamp!.trim())) return refuse("webhook-timestamp must be unix seconds");
  const t = Number(timestamp);
  const macs = signature!
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => fromBase64(s.slice(3)))
    .filter((mac): mac is Uint8Array => mac?.length === 32);
  if (macs.length === 0) return refuse(`${HEADER} has no v1,<base64> signature (other versions, such as v1a, are not accepted)`);
  // The reference library signs the timestamp as a number: "0017…" is signed as "17…".
  return { t, macs, signedText: (body) => concat(utf8(`${id}.${t}.`), body) };
}

/** The HMAC key of a `whsec_<base64>` secret (the prefix is optional, as in the reference library). */
export function standardWebhooksKey(secret: string): Uint8Array | null {
  const key = fromBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret);
  return key && key.length > 0 ? key : null;
}

const scheme: Scheme = { header: HEADER, timestampLabel: "webhook-timestamp", parse, key: standardWebhooksKey };

/**
 * id = webhook-id (kept by retries); type = body `type`; time = body
 * `timestamp` when it is ISO-8601 text or plausible epoch ms, else
 * webhook-timestamp × 1000 (the send time, which retries renew).
 */
function envelope(headers: Headers, body: Uint8Array): EnvelopeResult {
  const id = nonEmpty(header(headers, "id"));
  if (id === null) return refuse("missing webhook-id header");
  const json = jsonObject(body);
  if (!json.ok) return json;
  const time = eventTime(json.value.timestamp) ?? sendTime(header(headers, "timestamp"));
  if (time === null) return refuse('no event time: the body has no ISO-8601 or epoch-ms "timestamp" and webhook-timestamp is not unix seconds');
  return { ok: true, row: { id, time, type: nonEmpty(json.value.type), payload: json.value }, identity: id };
}

function eventTime(value: unknown): number | null {
  if (typeof value === "string") return parseIsoTimestamp(value);
  if (typeof value === "number" && Number.isInteger(value) && value >= MIN_PLAUSIBLE_MS) return value;
  return null;
}

const sendTime = (timestamp: string | null) => (timestamp !== null && /^\d{1,12}$/.test(timestamp.trim()) ? Number(timestamp) * 1000 : null);

/** The webhook-signature value a Standard Webhooks sender would send: for tests, scripts and docs. */
export async function signStandardWebhooks(secret: string, id: string, t: number, body: string | Uint8Array): Promise<string> {
  const key = standardWebhooksKey(secret);
  if (key === null) throw new Error("a Standard Webhooks secret is whsec_<base64>");
  return `v1,${toBase64(await hmacSha256(key, concat(utf8(`${id}.${t}.`), bytesOf(body))))}`;
}

export const standardWebhooks: Provider = {
  type: "standard-webhooks",
  identity: "signed-id",
  ...checks(scheme),
  envelope,
  secretProblem: (secret) => (standardWebhooksKey(secret) === null ? "the secret must be whsec_<base64 of the key>" : null),
};

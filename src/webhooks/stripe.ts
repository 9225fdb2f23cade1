import { bytesOf, concat, fromHex, hmacSha256, toHex, utf8 } from "../lib/bytes";
import { jsonObject, nonEmpty } from "./envelope";
import { refuse, type EnvelopeResult, type Provider, type Refusal } from "./provider";
import { checks, textKey, textSecretProblem, type Scheme, type Signed } from "./signature";

/**
 * Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>…]`, HMAC-SHA256 of
 * `${t}.${body}` keyed by the endpoint secret's UTF-8 (the whole `whsec_…`
 * string, not decoded). Several v1 appear while Stripe rolls a secret; v0
 * (test-mode legacy) and unknown schemes are ignored, as Stripe's library does.
 */
const HEADER = "Stripe-Signature";

const signedText = (t: number) => (body: Uint8Array) => concat(utf8(`${t}.`), body);

function parse(headers: Headers): Signed | Refusal {
  const value = headers.get(HEADER);
  if (value === null) return refuse(`missing ${HEADER} header`);
  let t: number | null = null;
  const macs: Uint8Array[] = [];
  for (const part of value.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const [key, val] = [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (key === "t") {
      if (t !== null || !/^\d{1,12}$/.test(val)) return refuse(`${HEADER} must carry one t=<unix seconds>`);
      t = Number(val);
    } else if (key === "v1") {
      const mac = fromHex(val);
      if (mac?.length === 32) macs.push(mac); // anything else cannot match: skipped, like another scheme
    }
  }
  if (t === null) return refuse(`${HEADER} has no t=<unix seconds>`);
  if (macs.length === 0) return refuse(`${HEADER} has no v1=<64 hex digits> signature (other schemes, such as v0, are not accepted)`);
  return { t, macs, signedText: signedText(t) };
}

const scheme: Scheme = { header: HEADER, timestampLabel: `${HEADER} t`, parse, key: textKey };

/** id, type and `created` (unix seconds) come from the event object itself. */
function envelope(_headers: Headers, body: Uint8Array): EnvelopeResult {
  const json = jsonObject(body);
  if (!json.ok) return json;
  const event = json.value;
  const id = nonEmpty(event.id);
  if (id === null) return refuse('the Stripe event has no "id"');
  if (typeof event.created !== "number" || !Number.isInteger(event.created)) return refuse('the Stripe event has no "created" (unix seconds)');
  return { ok: true, row: { id, time: event.created * 1000, type: nonEmpty(event.type), payload: event }, identity: id };
}

/** The Stripe-Signature value Stripe would send for `body` at `t` (unix seconds): for tests, scripts and docs. */
export async function signStripe(secret: string, body: string | Uint8Array, t: number): Promise<string> {
  return `t=${t},v1=${toHex(await hmacSha256(utf8(secret), signedText(t)(bytesOf(body))))}`;
}

export const stripe: Provider = {
  type: "stripe",
  identity: "signed-id",
  ...checks(scheme),
  envelope,
  secretProblem: textSecretProblem,
};

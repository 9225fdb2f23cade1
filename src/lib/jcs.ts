/**
 * RFC 8785 JSON Canonicalization Scheme (JCS) for values that came from
 * JSON.parse. JCS serializes numbers and strings exactly as ECMAScript's
 * JSON.stringify does (shortest round-trip numbers, -0 as 0, 1e21 as "1e+21";
 * only `"`, `\` and control characters escaped, \u00xx in lower case), and
 * sorts object members by the UTF-16 code units of their names, which is
 * what JavaScript's default string comparison does. So the scheme is a small
 * recursive walk; test/unit/jcs.test.ts runs the RFC's own examples.
 */

/**
 * Members to leave out, by name: `null` leaves the member out, a nested tree
 * leaves members out of the object it holds (nothing, if it holds no object
 * or an array). Built from dotted paths by src/stream/content.ts omissionOf.
 */
export type Omission = ReadonlyMap<string, Omission | null>;

/**
 * The canonical JSON of `value`, without the members `omit` names: the same
 * text as the canonical JSON of a copy with them deleted, without making the
 * copy. This runs for every row of an id-keyed stream, hence the plain loops.
 */
export function canonicalJson(value: unknown, omit: Omission | null = null): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("JCS has no representation for NaN or Infinity");
      return String(value); // what JSON.stringify gives a finite number (-0 as "0")
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (value === null) return "null";
      return Array.isArray(value) ? arrayJson(value) : objectJson(value as Record<string, unknown>, omit);
    default:
      throw new TypeError(`JCS has no representation for ${typeof value}`);
  }
}

function arrayJson(value: readonly unknown[]): string {
  let out = "[";
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    out += (i > 0 ? "," : "") + (v === undefined ? "null" : canonicalJson(v));
  }
  return out + "]";
}

function objectJson(obj: Record<string, unknown>, omit: Omission | null): string {
  const keys = Object.keys(obj);
  if (keys.length > 1 && !ascending(keys)) keys.sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const v = obj[k];
    if (v === undefined) continue;
    let inner: Omission | null = null;
    if (omit !== null) {
      const o = omit.get(k);
      if (o === null) continue;
      if (o !== undefined && typeof v === "object" && v !== null && !Array.isArray(v)) inner = o;
    }
    out += (out.length > 1 ? "," : "") + JSON.stringify(k) + ":" + canonicalJson(v, inner);
  }
  return out + "}";
}

/** Whether the names are already in JCS order (rows usually come with few members, often sorted): then there's nothing to sort. */
function ascending(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return false;
  return true;
}

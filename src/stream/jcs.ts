/**
 * RFC 8785 JSON Canonicalization Scheme (JCS) for values that came from
 * JSON.parse. JCS serializes numbers and strings exactly as ECMAScript's
 * JSON.stringify does (shortest round-trip numbers, -0 as 0, 1e21 as "1e+21";
 * only `"`, `\` and control characters escaped, \u00xx in lower case), and
 * sorts object members by the UTF-16 code units of their names, which is
 * what JavaScript's default string comparison does. So the scheme is a small
 * recursive walk; test/unit/jcs.test.ts runs the RFC's own examples.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("JCS has no representation for NaN or Infinity");
    if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") {
      throw new TypeError(`JCS has no representation for ${typeof value}`);
    }
    return JSON.stringify(value);
  }
  // Plain loops: this runs for every row of an id-keyed stream.
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + canonicalJson(value[i] === undefined ? null : value[i]);
    return out + "]";
  }
  const obj = value as Record<string, unknown>;
  out = "{";
  for (const k of Object.keys(obj).sort()) {
    const v = obj[k];
    if (v === undefined) continue;
    out += (out.length > 1 ? "," : "") + JSON.stringify(k) + ":" + canonicalJson(v);
  }
  return out + "}";
}

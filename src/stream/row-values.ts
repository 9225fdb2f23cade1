/**
 * Whether every value in a row has a JSON form, so that everything that
 * writes the row (the output's NDJSON, the canonical JSON of its digest or
 * content key) writes what was judged. JSON.parse reads `1e999` as Infinity
 * and Workers RPC carries NaN and BigInt: JSON.stringify writes the first two
 * as `null` and throws on the third, and the canonical JSON throws on all of
 * them. Such a row is that row's error, never its batch's. Pure.
 */
import { MAX_JSON_DEPTH, tooDeep } from "../lib/json";

/**
 * Why a value in `row` has no JSON form, naming where (`amount`,
 * `payload.items[3].price`) and never the value; null when all have one.
 * Nesting past the depth limit (a cycle over RPC) is refused too, so the
 * walk is bounded whatever the ingress checked.
 */
export function rowValueFault(row: Readonly<Record<string, unknown>>): string | null {
  return objectFault(row, "", 1);
}

function objectFault(obj: Readonly<Record<string, unknown>>, path: string, depth: number): string | null {
  for (const k in obj) {
    if (!Object.hasOwn(obj, k)) continue;
    const v = obj[k];
    // Plain fields are the common case: no path is built for them.
    if (v === null || typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))) continue;
    const fault = valueFault(v, path === "" ? k : `${path}.${k}`, depth);
    if (fault !== null) return fault;
  }
  return null;
}

function valueFault(v: unknown, path: string, depth: number): string | null {
  switch (typeof v) {
    case "number":
      return Number.isFinite(v) ? null : `${path}: not a finite number (NaN and ±Infinity, which 1e999 reads as, have no JSON form)`;
    case "bigint":
      return `${path}: a BigInt has no JSON form (send it as a string or a number)`;
    case "object": {
      if (v === null) return null;
      if (depth >= MAX_JSON_DEPTH) return `row ${tooDeep()}`; // (its path would be as long as the nesting)
      if (!Array.isArray(v)) return objectFault(v as Record<string, unknown>, path, depth + 1);
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (x === null || typeof x === "string" || typeof x === "boolean" || (typeof x === "number" && Number.isFinite(x))) continue;
        const fault = valueFault(x, `${path}[${i}]`, depth + 1);
        if (fault !== null) return fault;
      }
      return null;
    }
    default:
      // undefined, functions and symbols: JSON.stringify leaves them out, as it always has.
      return null;
  }
}

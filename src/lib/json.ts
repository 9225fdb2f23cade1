/**
 * The one JSON reader for everything the service parses from outside (HTTP
 * bodies, webhook payloads, file lines, queue messages): a nesting limit
 * checked before anything recurses into the value (hashing, canonical JSON,
 * structured clone to a Durable Object), and errors that say where and what
 * kind of problem, never the bytes (a row may hold a secret). Pure.
 */

/** Deeper JSON is refused before it is parsed: rows are records, and deep nesting is a denial-of-service shape. */
export const MAX_JSON_DEPTH = 64;

export type JsonResult = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * The deepest bracket nesting of a JSON text, ignoring brackets inside
 * strings; it stops counting once past `stopAt` (the answer is then stopAt + 1).
 */
export function textDepth(text: string, stopAt = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92 /* \\ */) i++;
      else if (ch === 34 /* " */) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 91 || ch === 123 /* [ { */) {
      if (++depth > max && (max = depth) > stopAt) return max;
    } else if (ch === 93 || ch === 125 /* ] } */) depth--;
  }
  return max;
}

/**
 * Whether an already-parsed value (a queue message that arrived as an object)
 * nests deeper than `limit` arrays and objects. Iterative, so that the check
 * itself cannot overflow the stack; it stops at the first path past the limit.
 * Each object is visited once, so a structured-clone value that shares or
 * cycles objects costs its size, not its paths: a depth of distinct objects.
 * What an ingress takes is bounded by valueShapeFault, which counts paths.
 */
export function valueDeeperThan(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const seen = new Set<object>();
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object" || seen.has(v)) continue;
    if (d + 1 > limit) return true;
    seen.add(v);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return false;
}

/**
 * The most places a parsed value may hold values in: a structured-clone value
 * (a Workers RPC argument, a v8 queue message) may share one object from many
 * places, and JSON.stringify writes it out at every one of them.
 */
export const MAX_JSON_PLACES = 1 << 22;

/**
 * Why a parsed value can't be read as the JSON it will be written as, or
 * null: nested deeper than `limit` counted along every path (a cycle is
 * endless), or more than `maxPlaces` values counted at every place they
 * appear (shared objects). What JSON.stringify and the canonical JSON would
 * walk, bounded before either runs; iterative, so the check cannot overflow
 * the stack. Follows a subject, as JsonResult errors do.
 */
export function valueShapeFault(value: unknown, limit = MAX_JSON_DEPTH, maxPlaces = MAX_JSON_PLACES): string | null {
  const stack: [unknown, number][] = [[value, 0]];
  for (let places = 0; stack.length > 0; places++) {
    if (places >= maxPlaces) return `holds more than ${maxPlaces} values (an object shared from several places counts at each)`;
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (d + 1 > limit) return tooDeep(limit);
    if (Array.isArray(v)) for (let i = 0; i < v.length; i++) stack.push([v[i], d + 1]);
    else for (const k in v) if (Object.hasOwn(v, k)) stack.push([(v as Record<string, unknown>)[k], d + 1]);
  }
  return null;
}

/** Why JSON past the limit is refused; follows a subject, as JsonResult errors do. */
export const tooDeep = (limit = MAX_JSON_DEPTH) => `nests arrays and objects more than ${limit} levels deep; at most ${limit} are accepted`;

/** An already-parsed value, within the limits (valueShapeFault), or the refusal. */
export function checkDepth(value: unknown, limit = MAX_JSON_DEPTH): JsonResult {
  const fault = valueShapeFault(value, limit);
  return fault === null ? { ok: true, value } : { ok: false, error: fault };
}

/**
 * JSON.parse with the depth limit first. `error` follows a subject ("the
 * body ", "line 3 "): "is not valid JSON (a syntax error at line 1, column 8)"
 * or "nests more than 64 levels…".
 */
export function parseJson(text: string, limit = MAX_JSON_DEPTH): JsonResult {
  if (textDepth(text, limit) > limit) return { ok: false, error: tooDeep(limit) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    return { ok: false, error: `is not valid JSON (${describeJsonError(e, text)})` };
  }
}

/**
 * A JSON.parse error in words that never quote the input: V8's messages quote
 * it ("Unexpected token 's', "sk_live_…" is not valid JSON"), so only the kind
 * of error and its place are kept.
 */
export function describeJsonError(e: unknown, text: string): string {
  const message = e instanceof Error ? e.message : String(e);
  const at = /at position (\d+)/.exec(message);
  if (/Unexpected end of JSON input/i.test(message)) return "the text ends before the value is complete";
  if (at === null) {
    if (!/Unexpected token/i.test(message)) return "a syntax error";
    const position = unexpectedAt(text);
    return position === null ? "an unexpected character" : `an unexpected character at ${lineColumn(text, position)}`;
  }
  const position = Number(at[1]);
  const kind = /^Unterminated string/i.test(message)
    ? "an unterminated string"
    : /^Bad control character/i.test(message)
      ? "a control character inside a string"
      : /^Bad (escaped|Unicode escape)/i.test(message)
        ? "a bad escape inside a string"
        : /^Unexpected non-whitespace character after JSON/i.test(message)
          ? "more text after the value"
          : "a syntax error";
  return `${kind} at ${lineColumn(text, position)}`;
}

/** Past this, an unexpected character is reported without its place (finding it costs a few parses). */
const LOCATE_UP_TO = 1 << 20;

/**
 * Where V8's "Unexpected token" is (it names the character, not the place):
 * the shortest prefix that fails other than by ending early ends just past it.
 * Failing that way is monotone in the prefix length, so a binary search finds it.
 */
function unexpectedAt(text: string): number | null {
  if (text.length > LOCATE_UP_TO) return null;
  const failsInside = (length: number) => {
    try {
      JSON.parse(text.slice(0, length));
      return false;
    } catch (e) {
      const m = e instanceof Error ? e.message : "";
      const at = /at position (\d+)/.exec(m);
      return !/Unexpected end of JSON input/i.test(m) && (at === null || Number(at[1]) < length);
    }
  };
  let [lo, hi] = [0, text.length]; // failsInside(hi) holds; find the least such length
  if (!failsInside(hi)) return null;
  while (lo + 1 < hi) {
    const mid = (lo + hi) >>> 1;
    if (failsInside(mid)) hi = mid;
    else lo = mid;
  }
  return hi - 1;
}

/** "line 3, column 7" (1-based) of a UTF-16 offset; "column 7" in a one-line text (an NDJSON line). */
function lineColumn(text: string, position: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < position; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  const column = `column ${position - start + 1}`;
  return text.includes("\n") ? `line ${line}, ${column}` : column;
}

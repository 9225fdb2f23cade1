import { parseJson } from "../lib/json";
import { badRequest, HttpError } from "./problem";
import { concat } from "../lib/bytes";
import type { ParseMode } from "../stream/batch-identity";

/** No stream may accept more than this; RPC payloads to a Durable Object top out at 32 MiB. */
export const HARD_BODY_LIMIT = 32 * 1024 * 1024;

/**
 * Reads the body, refusing (413) past `limit` bytes without buffering the rest:
 * a declared Content-Length over it is refused before reading anything. When
 * the body turns out larger, `beyond()` may allow a larger limit (a batch that
 * began under higher limits), or return null to refuse.
 */
export async function readBody(req: Request, limit: number, beyond: () => Promise<number | null> = async () => null): Promise<Uint8Array> {
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > limit) limit = await raise(limit, declared, beyond);
  if (!req.body) return new Uint8Array();
  if (Number.isFinite(declared)) {
    // Its length is declared and allowed: read it whole, one call instead of a loop of reads and a copy (the runtime holds a body to its Content-Length).
    const whole = new Uint8Array(await req.arrayBuffer());
    if (whole.byteLength > limit) await raise(limit, whole.byteLength, beyond);
    return whole;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      try {
        limit = await raise(limit, size, beyond);
      } catch (e) {
        await reader.cancel();
        throw e;
      }
    }
    chunks.push(value);
  }
  return concat(...chunks);
}

async function raise(limit: number, size: number, beyond: () => Promise<number | null>): Promise<number> {
  const next = await beyond();
  if (next === null || size > next) throw tooLarge(limit);
  return next;
}

export function tooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    "body-too-large",
    "Payload too large",
    `the body is larger than ${limit} bytes; this stream accepts at most ${limit}; split the batch`,
  );
}

/** More rows than a stream accepts: parsing stopped there. */
export class TooManyRows extends HttpError {
  constructor(maxRows: number, counted: number | null) {
    super(413, "batch-too-large", "Payload too large", `the batch has ${counted ?? `more than ${maxRows}`} rows; this stream accepts at most ${maxRows}`);
  }
}

/** The most rows any batch may have, whatever a stream's limits once were. */
export const HARD_MAX_ROWS = 100_000;

/** How a body parses follows its Content-Type, so the mode is part of a batch's identity. */
export function parseMode(contentType: string | null): ParseMode {
  return /^application\/(x-ndjson|jsonl|x-jsonlines|ndjson)\b/i.test(contentType ?? "") ? "ndjson" : "json";
}

/**
 * The rows of an ingest body: one JSON object, a JSON array, or NDJSON (one
 * value per line; blank lines are skipped). Anything else is a 400 that names
 * the problem, and nothing is applied.
 */
export function parseRows(bytes: Uint8Array, contentType: string | null, maxRows = HARD_MAX_ROWS): unknown[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw badRequest("the body is not valid UTF-8");
  }
  if (text.trim() === "") throw badRequest("the body is empty; send a JSON object, a JSON array or NDJSON");
  if (parseMode(contentType) === "ndjson") return parseNdjson(text, maxRows);
  const parsed = parseJson(text);
  if (!parsed.ok) {
    throw badRequest(`the body ${parsed.error}${parsed.error.startsWith("is not") ? "; for one object per line send Content-Type: application/x-ndjson" : ""}`);
  }
  const value = parsed.value;
  if (Array.isArray(value)) {
    if (value.length === 0) throw badRequest("the batch has no rows");
    if (value.length > maxRows) throw new TooManyRows(maxRows, value.length);
    return value;
  }
  if (value !== null && typeof value === "object") return [value];
  throw badRequest("the body must be a JSON object, a JSON array of objects, or NDJSON, not a JSON scalar");
}

/** One value per line, stopping as soon as there are more than `maxRows`; each line within the depth limit. */
function parseNdjson(text: string, maxRows: number): unknown[] {
  const rows: unknown[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "") continue;
    if (rows.length === maxRows) throw new TooManyRows(maxRows, null);
    const parsed = parseJson(line);
    if (!parsed.ok) {
      throw badRequest(`NDJSON line ${i + 1} ${parsed.error}; nothing was applied`, {
        errors: [{ line: i + 1, error: parsed.error }],
      });
    }
    rows.push(parsed.value);
  }
  if (rows.length === 0) throw badRequest("the batch has no rows");
  return rows;
}

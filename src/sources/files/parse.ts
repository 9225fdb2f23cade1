/**
 * The rows of an input file, read as Spark's JSON source reads it (DESIGN §7),
 * pure (no Cloudflare imports):
 *
 * - `.json`: JSON Lines by default (Spark's `multiLine` is false: one value per
 *   line, whatever the file is called); a file that is one JSON document (an
 *   array or an object, pretty-printed or not) is read whole, as it always was.
 *   `multiLine: true` reads the file whole only; `multiLine: false` only as lines.
 * - `.ndjson` / `.jsonl`: JSON Lines.
 *
 * A line that is not valid JSON does not fail the file (Spark's PERMISSIVE
 * mode goes on too): it becomes a placeholder row that validation rejects with
 * a reason naming the line (src/stream/schema.ts, CORRUPT_LINE), so the batch
 * reports it as a rejected row and ingests the rest. Neither reasons nor errors
 * quote the file's bytes.
 */
import { TooManyRows } from "../../http/body";
import { MAX_JSON_DEPTH as MAX_DEPTH, textDepth as nestingDepth } from "../../lib/json";
import { badRequest } from "../../http/problem";
import { CORRUPT_LINE, CORRUPT_WHY } from "../../stream/schema";
import type { FileMode } from "../file-kind";

/** How the file's rows were read: "json" whole (its batch identity is the bare hash, as before), "ndjson" as lines. */
export type ReadAs = "json" | "ndjson";

export interface FileRows {
  rows: unknown[];
  readAs: ReadAs;
  /** lines (1-based) that are not valid JSON: each is a rejected row */
  corruptLines: number[];
}

/**
 * The one place a piece of a file is parsed as JSON: the nesting check sits
 * here so that every parse gets it. Returns undefined when it is not JSON (or
 * nests too deep); the caller says which line or file.
 */
export function parseJsonText(text: string): { ok: true; value: unknown } | { ok: false; why: "invalid" | "too-deep" } {
  if (nestingDepth(text) > MAX_DEPTH) return { ok: false, why: "too-deep" };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, why: "invalid" };
  }
}

/** The placeholder row of a line that is not JSON (or nests too deep): rejected by validation with the line's number and why, no bytes of it kept. */
export const corruptRow = (line: number, why: "invalid" | "too-deep" = "invalid") => ({
  [CORRUPT_LINE]: line,
  ...(why === "too-deep" ? { [CORRUPT_WHY]: why } : {}),
});

export function fileRows(text: string, mode: FileMode, multiLine: boolean | undefined, maxRows: number): FileRows {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === "") throw badRequest("the file is empty: it has no rows");
  if (mode === "json" && multiLine !== false) {
    const whole = wholeDocument(text, maxRows);
    if (whole) return { rows: whole, readAs: "json", corruptLines: [] };
    if (multiLine === true) {
      throw badRequest(
        `the file is not one JSON document (an array or an object), which "multiLine": true reads; leave multiLine out to read one object per line`,
      );
    }
  }
  return jsonLines(text, maxRows);
}

/** The file as one JSON array or object; null when it is not one JSON text (then it is read as lines). */
function wholeDocument(text: string, maxRows: number): unknown[] | null {
  // A file of several lines of objects fails at its second value: cheap to try first.
  const parsed = parseJsonText(text);
  if (!parsed.ok) {
    if (parsed.why === "too-deep") throw badRequest(`the file nests more than ${MAX_DEPTH} levels deep`);
    return null;
  }
  const value = parsed.value;
  if (Array.isArray(value)) {
    if (value.length === 0) throw badRequest("the file is an empty JSON array: it has no rows");
    if (value.length > maxRows) throw new TooManyRows(maxRows, value.length);
    return value;
  }
  if (value !== null && typeof value === "object") return [value];
  return null; // a scalar on one line: a JSON Lines file of one (rejected) row
}

/** One value per non-blank line (a trailing "\r" is whitespace); a line that is not JSON is a placeholder row. */
function jsonLines(text: string, maxRows: number): FileRows {
  const rows: unknown[] = [];
  const corruptLines: number[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "") continue;
    if (rows.length === maxRows) throw new TooManyRows(maxRows, null);
    const parsed = parseJsonText(line);
    if (parsed.ok) rows.push(parsed.value);
    else {
      rows.push(corruptRow(i + 1, parsed.why));
      corruptLines.push(i + 1);
    }
  }
  if (rows.length === 0) throw badRequest("the file has no rows");
  return { rows, readAs: "ndjson", corruptLines };
}

/**
 * A file becomes rows, rows become NDJSON batches, and each batch gets an id
 * that depends only on the file's name, the batch's position and its bytes:
 * the same file sends the same ids with the same bytes every time, so the
 * service replays them instead of ingesting them again.
 */
import { createHash } from "node:crypto";
import type { InputKind } from "./walk.ts";

export interface ChunkLimits {
  /** rows per batch at most */
  maxRows: number;
  /** body bytes per batch at most (a single larger row still goes alone) */
  maxBytes: number;
}

export const DEFAULT_LIMITS: ChunkLimits = { maxRows: 1000, maxBytes: 5 * 1024 * 1024 };

export interface Batch {
  /** the file's name in the run (InputFile.rel) */
  file: string;
  /** 0, 1, 2… within the file */
  index: number;
  /** the Idempotency-Key */
  id: string;
  rows: number;
  /** NDJSON, one row a line, each line ending in "\n": exactly the bytes hashed into the id */
  body: Uint8Array<ArrayBuffer>;
}

export class FileError extends Error {}

/**
 * One NDJSON line per row, from the text of a `.json` or `.ndjson`/`.jsonl`
 * file. A `.json` file is read as Spark's JSON source reads it (as the
 * service's file runs do): JSON Lines, unless the whole file is one JSON
 * document (an array: one row per element; an object: one row).
 */
export function rowsOf(text: string, kind: InputKind): string[] {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return kind === "json" ? jsonRows(text) : ndjsonRows(text);
}

function jsonRows(text: string): string[] {
  if (text.trim() === "") return [];
  const whole = parseJson(text);
  if (whole.ok) {
    const value = whole.value;
    if (Array.isArray(value)) return value.map((v) => JSON.stringify(v));
    if (value !== null && typeof value === "object") return [JSON.stringify(value)];
    throw new FileError("a .json file must hold an array or an object (the whole file, or one object per line)");
  }
  return ndjsonRows(text);
}

/**
 * Each non-blank line is a row, kept as written (trimmed), after checking
 * that it parses. A line that does not fails the file (nothing of it is sent,
 * so the fixed file sends the same batch ids); the error names the line and
 * never quotes it.
 */
function ndjsonRows(text: string): string[] {
  const rows: string[] = [];
  const lines = text.split("\n");
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    if (!parseJson(line).ok)
      throw new FileError(`line ${i + 1} is not valid JSON (a .json file is read as one object per line unless it is one JSON document)`);
    rows.push(line);
  }
  return rows;
}

/** The one place the CLI parses input JSON (a nesting check belongs here). */
function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export const sha256hex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

/** `cli:<sha256(name)[:16]>:<index>:<sha256(body)[:16]>`: visible ASCII, well under 255 characters. */
export function batchId(file: string, index: number, body: Uint8Array): string {
  return `cli:${sha256hex(file).slice(0, 16)}:${index}:${sha256hex(body).slice(0, 16)}`;
}

/**
 * Cuts rows into batches of at most `maxRows` rows and `maxBytes` bytes, in
 * order. Boundaries depend only on the rows, so appending rows to a file
 * changes its last batch and adds new ones, and editing a row changes only the
 * batch that holds it (unless its size moves a byte-limited boundary).
 */
export function chunkRows(file: string, rows: readonly string[], limits: ChunkLimits = DEFAULT_LIMITS): Batch[] {
  const batches: Batch[] = [];
  let lines: string[] = [];
  let bytes = 0;
  const flush = () => {
    if (lines.length === 0) return;
    const body = Buffer.from(lines.join("\n") + "\n", "utf8");
    const index = batches.length;
    batches.push({ file, index, id: batchId(file, index, body), rows: lines.length, body });
    lines = [];
    bytes = 0;
  };
  for (const row of rows) {
    const size = Buffer.byteLength(row, "utf8") + 1;
    if (lines.length > 0 && (lines.length >= limits.maxRows || bytes + size > limits.maxBytes)) flush();
    lines.push(row);
    bytes += size;
  }
  flush();
  return batches;
}

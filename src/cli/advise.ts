/**
 * `edge-dedup advise FILE… --key COL[,COL…] --time COL`: reads a history of
 * events and prints the delay advisor's figures (src/stream/advisor). This file
 * only parses the arguments and reads the files; the figures are pure.
 */
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { extname } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { parseArgs } from "node:util";
import { advise, DEFAULT_BYTES_PER_KEY, DEFAULT_MARGIN, HistoryNotes, renderAdvice, type AdviseOptions } from "../stream/advisor/index.ts";
import type { ProgressSink } from "./progress.ts";

export const ADVISE_USAGE = `Usage: edge-dedup advise FILE... --key COL[,COL...] --time COL [options]

Reads a history of events (NDJSON, one row per line, or a JSON array; "-" reads
stdin) in the order they arrived and recommends a watermarkDelay: it covers the
p99.9 of the event-time gaps between copies of a key and the p99.9 of how far
out of order a source delivers, times a margin, rounded up. It prints what that
delay would have caught over this history and the state each mode would hold.

Options:
  --key COL[,COL...]    the key columns (required)
  --time COL            the event-time column (required): ISO-8601 or epoch numbers
  --source COL          the column naming each row's source (default: one source)
  --unit ms|s           what a bare number in the time column means (default ms)
  --margin X            multiply the p99.9 figures by X ≥ 1 (default ${DEFAULT_MARGIN})
  --bytes-per-key N     state bytes per remembered key (default ${DEFAULT_BYTES_PER_KEY}: text keys of ~20 characters; ~32 with stateKeys "hashed")
  --json                print the figures as JSON (durations in ms)
  -h, --help            this text

Exit status: 0 with a recommendation, 1 when an input cannot be read or holds no
usable event, 2 on a usage error.`;

interface AdviseIo {
  stdout: { write(text: string): unknown };
  stderr: ProgressSink;
  /** stdin's text (tests); default: file descriptor 0 */
  stdin?: () => string;
}

class InputError extends Error {}

type ParsedAdvise = { kind: "help" } | { kind: "error"; message: string } | { kind: "advise"; files: string[]; options: AdviseOptions; json: boolean };

const COLUMN = /^[^,]+$/;

export function parseAdviseArgs(argv: readonly string[]): ParsedAdvise {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        key: { type: "string" },
        time: { type: "string" },
        source: { type: "string" },
        unit: { type: "string" },
        margin: { type: "string" },
        "bytes-per-key": { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    return { kind: "error", message: (e as Error).message };
  }
  const { values: v, positionals: files } = parsed;
  if (v.help) return { kind: "help" };
  if (files.length === 0) return { kind: "error", message: 'name at least one file of events ("-" for stdin)' };
  if (!v.key) return { kind: "error", message: "--key is required (one column, or several separated by commas)" };
  const key = v.key.split(",").map((c) => c.trim());
  if (key.some((c) => c === "" || !COLUMN.test(c))) return { kind: "error", message: `--key must name columns separated by commas, not "${v.key}"` };
  if (!v.time) return { kind: "error", message: "--time is required (the event-time column)" };
  if (v.unit !== undefined && v.unit !== "ms" && v.unit !== "s") return { kind: "error", message: `--unit must be ms or s, not "${v.unit}"` };
  const margin = v.margin === undefined ? DEFAULT_MARGIN : Number(v.margin);
  if (!/^\d+(\.\d+)?$/.test(v.margin ?? "1") || !(margin >= 1) || margin > 100)
    return { kind: "error", message: `--margin must be a number from 1 to 100, not "${v.margin}"` };
  const bytesPerKey = v["bytes-per-key"] === undefined ? DEFAULT_BYTES_PER_KEY : Number(v["bytes-per-key"]);
  if (!/^\d+$/.test(v["bytes-per-key"] ?? "1") || bytesPerKey < 1)
    return { kind: "error", message: `--bytes-per-key must be a whole number ≥ 1, not "${v["bytes-per-key"]}"` };
  return {
    kind: "advise",
    files,
    json: v.json ?? false,
    options: { key, time: v.time, source: v.source, unit: (v.unit as "ms" | "s" | undefined) ?? "ms", margin, bytesPerKey },
  };
}

/** The lines of a file, read 1 MiB at a time (a big history is never held whole). */
function* fileLines(path: string): Generator<string> {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(1 << 20);
    const decoder = new StringDecoder("utf8");
    let rest = "";
    for (let n = readSync(fd, buf, 0, buf.length, null); n > 0; n = readSync(fd, buf, 0, buf.length, null)) {
      const parts = (rest + decoder.write(buf.subarray(0, n))).split("\n");
      rest = parts.pop()!;
      yield* parts;
    }
    rest += decoder.end();
    if (rest !== "") yield rest;
  } finally {
    closeSync(fd);
  }
}

function firstChar(path: string): string {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf
      .subarray(0, n)
      .toString("utf8")
      .replace(/^\uFEFF/, "")
      .trimStart()
      .charAt(0);
  } finally {
    closeSync(fd);
  }
}

interface Located {
  /** "file:line" or "file[index]" of the row yielded last */
  where: string;
}

/** A whole JSON text: an array gives its elements, anything else one row. */
function* jsonRows(name: string, text: string, at: Located): Generator<unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (e) {
    throw new InputError(`${name}: not valid JSON (${(e as Error).message})`);
  }
  const rows = Array.isArray(value) ? value : [value];
  for (let i = 0; i < rows.length; i++) {
    at.where = Array.isArray(value) ? `${name}[${i}]` : name;
    yield rows[i];
  }
}

function* ndjsonRows(name: string, lines: Iterable<string>, at: Located, notes: HistoryNotes | null): Generator<unknown> {
  let n = 0;
  for (const raw of lines) {
    n++;
    const line = (n === 1 ? raw.replace(/^\uFEFF/, "") : raw).trim();
    if (line === "") continue;
    at.where = `${name}:${n}`;
    try {
      yield JSON.parse(line);
    } catch {
      notes?.skip(at.where, "not valid JSON");
    }
  }
}

/** The rows of every input, in order; `notes` (first pass only) collects lines that are not JSON. */
function* rowsOfInputs(files: readonly string[], readStdin: () => string, at: Located, notes: HistoryNotes | null): Generator<unknown> {
  for (const file of files) {
    if (file === "-") {
      const text = readStdin();
      const first = text
        .replace(/^\uFEFF/, "")
        .trimStart()
        .charAt(0);
      yield* first === "[" ? jsonRows("stdin", text, at) : ndjsonRows("stdin", text.split("\n"), at, notes);
      continue;
    }
    let wholeJson: boolean;
    try {
      if (!statSync(file).isFile()) throw new InputError(`${file}: not a file`);
      wholeJson = extname(file).toLowerCase() === ".json" || firstChar(file) === "[";
    } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`${file}: cannot read (${(e as Error).message})`);
    }
    yield* wholeJson ? jsonRows(file, readFileSync(file, "utf8"), at) : ndjsonRows(file, fileLines(file), at, notes);
  }
}

export async function runAdvise(argv: readonly string[], io: AdviseIo): Promise<number> {
  const parsed = parseAdviseArgs(argv);
  if (parsed.kind === "help") {
    io.stdout.write(ADVISE_USAGE + "\n");
    return 0;
  }
  if (parsed.kind === "error") {
    io.stderr.write(`edge-dedup advise: ${parsed.message}\n(edge-dedup advise --help for usage)\n`);
    return 2;
  }
  // stdin can be read once only: keep its text for the second pass.
  let stdinText: string | undefined;
  const readStdin = () => (stdinText ??= io.stdin ? io.stdin() : readFileSync(0, "utf8"));
  const at: Located = { where: "" };
  const notes = new HistoryNotes();
  let passes = 0;
  const open = () => rowsOfInputs(parsed.files, readStdin, at, passes++ === 0 ? notes : null);
  let result;
  try {
    result = advise(open, { ...parsed.options, where: () => at.where }, notes);
  } catch (e) {
    if (e instanceof InputError) {
      io.stderr.write(`edge-dedup advise: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  io.stdout.write(parsed.json ? JSON.stringify(result.advice, null, 2) + "\n" : renderAdvice(result));
  if (result.advice.events === 0) {
    io.stderr.write("edge-dedup advise: no row had a key and an event time: check --key and --time\n");
    return 1;
  }
  return 0;
}

/**
 * `edge-dedup send`: walk the inputs, cut each file into batches with stable
 * ids, send them with a few in flight, and print what happened. No Cloudflare
 * imports: this runs in plain Node (bin/edge-dedup.mjs).
 */
import { readFileSync } from "node:fs";
import { constants as bufferLimits } from "node:buffer";
import { gunzipSync } from "node:zlib";
import { runAdvise } from "./advise.ts";
import { runTable } from "./table.ts";
import { parseCli, USAGE, type SendOptions } from "./args.ts";
import { chunkRows, FileError, rowsOf, type Batch } from "./chunk.ts";
import { createProgress, type ProgressSink, type ProgressState } from "./progress.ts";
import { realDeps, sendBatch, type SendDeps } from "./sender.ts";
import { addOutcome, emptyCounts, noFailures, renderJson, renderTable, summarize, type FileReport, type Summary } from "./summary.ts";
import { waitPublished, type Published } from "./wait.ts";
import { UsageError, walkInputs, type InputFile } from "./walk.ts";

export interface Io {
  stdout: { write(text: string): unknown };
  stderr: ProgressSink;
  env: Record<string, string | undefined>;
  /** replaces fetch, sleep, random or the clock (tests) */
  deps?: Partial<SendDeps>;
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  if (argv[0] === "advise") return runAdvise(argv.slice(1), io);
  if (argv[0] === "table") return runTable(argv.slice(1), io);
  const parsed = parseCli(argv, io.env);
  if (parsed.kind === "help") {
    io.stdout.write(USAGE + "\n");
    return 0;
  }
  if (parsed.kind === "error") {
    io.stderr.write(`edge-dedup: ${parsed.message}\n(edge-dedup --help for usage)\n`);
    return 2;
  }
  try {
    const summary = await send(parsed.options, io);
    io.stdout.write(parsed.options.json ? renderJson(summary) : renderTable(summary));
    return summary.ok ? 0 : 1;
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`edge-dedup: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

/** A file's rows, read as the service reads an object (src/sources/files/object.ts): gunzipped when `.gz`, then strict UTF-8. */
function readRows(file: InputFile): string[] {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file.abs);
  } catch (e) {
    throw new FileError(`cannot read: ${(e as Error).message}`);
  }
  if (file.gzip) bytes = gunzip(bytes);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new FileError(bytes.byteLength > bufferLimits.MAX_STRING_LENGTH ? "too large to read at once: split it" : "the file is not valid UTF-8");
  }
  return rowsOf(text, file.kind);
}

function gunzip(bytes: Uint8Array): Uint8Array {
  try {
    // Bounded: a small file may expand to anything, and what is read must fit in one string.
    return gunzipSync(bytes, { maxOutputLength: bufferLimits.MAX_STRING_LENGTH });
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE")
      throw new FileError(`more than ${bufferLimits.MAX_STRING_LENGTH} bytes decompressed: too large to read at once; split it`);
    throw new FileError("the name ends in .gz but the file is not valid gzip");
  }
}

export async function send(options: SendOptions, io: Io): Promise<Summary> {
  const started = Date.now();
  const { files, skipped } = walkInputs(options.paths);
  const deps: SendDeps = { ...realDeps(), ...io.deps };

  // First pass: count rows for the progress totals, and find the files that cannot be read.
  const reports = new Map<string, FileReport>();
  const failures = noFailures();
  const readable: InputFile[] = [];
  const state: ProgressState = { filesDone: 0, filesTotal: files.length, rowsDone: 0, rowsTotal: 0, batchesFailed: 0 };
  for (const f of files) {
    const report: FileReport = { path: f.rel, ...emptyCounts(), errors: [] };
    reports.set(f.rel, report);
    try {
      state.rowsTotal += readRows(f).length;
      readable.push(f);
    } catch (e) {
      if (!(e instanceof FileError)) throw e;
      report.failed++;
      report.errors.push(e.message);
      failures.files++;
      state.filesDone++;
      state.batchesFailed++;
    }
  }

  const progress = createProgress(state, io.stderr, { quiet: options.quiet });
  const ticker = setInterval(() => progress.update(), 1_000);
  ticker.unref();
  deps.onRetry ??= (b, attempt, reason, delay) =>
    progress.note(`${b.file} batch ${b.index}: ${reason}; attempt ${attempt + 1} in ${(delay / 1000).toFixed(1)} s`);

  // Second pass, lazily: one file's batches in memory at a time (and the ones in flight).
  const left = new Map<string, number>(); // batches not finished yet, per file
  const fileFinished = () => {
    state.filesDone++;
    progress.update();
  };
  function* batches(): Generator<Batch> {
    for (const f of readable) {
      const report = reports.get(f.rel)!;
      let list: Batch[];
      try {
        const rows = readRows(f);
        list = chunkRows(f.rel, rows, options.limits);
        report.rows = rows.length;
        report.batches = list.length;
      } catch (e) {
        if (!(e instanceof FileError)) throw e;
        report.failed++;
        report.errors.push(`${e.message} (changed while sending?)`);
        failures.files++;
        state.batchesFailed++;
        fileFinished();
        continue;
      }
      if (list.length === 0) fileFinished();
      left.set(f.rel, list.length);
      yield* list;
    }
  }

  let stopped = null as { error: string; status?: number } | null;
  const queue = batches();
  const next = (): Batch | undefined => {
    if (stopped !== null) return undefined;
    const r = queue.next();
    return r.done ? undefined : r.value;
  };
  const worker = async () => {
    for (let b = next(); b !== undefined; b = next()) {
      const report = reports.get(b.file)!;
      const result = await sendBatch(b, options.target, options.retry, deps);
      if (result.ok) {
        addOutcome(report, result.outcome, result.attempts);
      } else {
        report.failed++;
        report.errors.push(`batch ${b.index} (${b.id}): ${result.error}`);
        state.batchesFailed++;
        progress.note(`${b.file} batch ${b.index} failed: ${result.error}`);
        if (result.fatal) stopped ??= { error: result.error, status: result.status };
        else if (result.status !== undefined && result.status < 500) failures.refused++;
        else failures.transient++;
      }
      state.rowsDone += b.rows;
      const remaining = left.get(b.file)! - 1;
      left.set(b.file, remaining);
      if (remaining === 0) fileFinished();
      else progress.update();
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    clearInterval(ticker);
  }

  // After a fatal answer (bad token, no such stream) the rest is not sent: count it as failed.
  if (stopped !== null) {
    const unsent = new Map<string, number>();
    for (let r = queue.next(); !r.done; r = queue.next()) unsent.set(r.value.file, (unsent.get(r.value.file) ?? 0) + 1);
    for (const [file, n] of unsent) {
      const report = reports.get(file)!;
      report.failed += n;
      report.errors.push(`${n} batch${n === 1 ? "" : "es"} not sent: the run stopped at "${stopped.error}"`);
      state.batchesFailed += n;
    }
  }
  failures.stopped = stopped;
  // As a file run: done once what was committed is readable where the stream writes (manifest, table), unless told not to wait.
  let published: Published | null = null;
  if (options.wait && stopped === null && [...reports.values()].some((r) => r.batches > 0)) {
    published = await waitPublished(options.target, deps, options.waitTimeoutMs, (text) => progress.note(text));
  }
  progress.finish();
  return summarize(options.target.stream, options.target.source ?? "default", [...reports.values()], skipped, Date.now() - started, failures, published);
}

/**
 * "Files, once each" (DESIGN §7): the pure part of a run, no Cloudflare
 * imports. A run lists its prefix page by page, skips the object versions
 * this stream has ingested already, and ingests the rest a bounded slice per
 * Durable Object alarm; these functions decide what each step does.
 */
import { HttpError } from "../../http/problem";
import { rejectedTotal, type BatchOutcome } from "../../stream/batch-outcome";
import { fileMode } from "../file-kind";
import { exhaustive, type SubmitResult } from "../../ingest/result";
import type { RunOptions } from "./run-body";

/** At most this many objects, or this many bytes of them, per alarm (at least one object). */
export const FILES_PER_ALARM = 20;
export const BYTES_PER_ALARM = 8 * 1024 * 1024;
/** An alarm stops taking objects after this long, and schedules the next one. */
export const ALARM_BUDGET_MS = 15_000;
/** R2 lists at most 1,000 keys per call. */
export const LIST_PAGE = 1000;
/** A run keeps the first few errors (the count of failed files is exact). */
export const MAX_ERRORS = 10;
/** An object that keeps failing for a reason that may pass (busy, a failed micro-batch, R2) fails the run after this many tries. */
export const MAX_TRANSIENT_ATTEMPTS = 8;

export interface Listed {
  key: string;
  etag: string;
  size: number;
}

export interface RunTotals {
  files: { done: number; skipped: number; failed: number; replayed: number };
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
}

export const emptyTotals = (): RunTotals => ({
  files: { done: 0, skipped: 0, failed: 0, replayed: 0 },
  input: 0,
  emitted: 0,
  duplicates: 0,
  late: 0,
  rejected: 0,
});

/**
 * One listing page: the objects to ingest (in key order, as R2 lists them),
 * how many are skipped (this stream ingested that key at that etag already),
 * and how many are not ours to read (not .json / .ndjson / .jsonl; not counted).
 */
export function planPage(
  objects: readonly Listed[],
  isDone: (key: string, etag: string) => boolean,
): { pending: Listed[]; skipped: Listed[]; ignored: number } {
  const pending: Listed[] = [];
  const skipped: Listed[] = [];
  let ignored = 0;
  for (const o of objects) {
    if (fileMode(o.key) === null) ignored++;
    else if (isDone(o.key, o.etag)) skipped.push(o);
    else pending.push(o);
  }
  return { pending, skipped, ignored };
}

/** How many of the next pending objects one alarm takes: up to FILES_PER_ALARM and BYTES_PER_ALARM, never none. */
export function takeSlice(pending: readonly { size: number }[], maxFiles = FILES_PER_ALARM, maxBytes = BYTES_PER_ALARM): number {
  let n = 0;
  let bytes = 0;
  while (n < pending.length && n < maxFiles) {
    bytes += pending[n].size;
    if (n > 0 && bytes > maxBytes) break;
    n++;
  }
  return n;
}

/** Whether a run lists another page before this alarm's slice: when it has fewer pending than a slice and the listing is not complete. */
export function needsListing(pendingCount: number, listed: boolean): boolean {
  return !listed && pendingCount < FILES_PER_ALARM;
}

/** A file ingested (or replayed: its recorded outcome counts, so a resumed run reports what an uninterrupted one would). */
export function addOutcome(t: RunTotals, o: BatchOutcome): RunTotals {
  return {
    files: { ...t.files, done: t.files.done + 1, replayed: t.files.replayed + (o.replayed ? 1 : 0) },
    input: t.input + o.input,
    emitted: t.emitted + o.emitted,
    duplicates: t.duplicates + o.duplicates,
    late: t.late + o.late,
    rejected: t.rejected + rejectedTotal(o),
  };
}

export function addFailed(t: RunTotals): RunTotals {
  return { ...t, files: { ...t.files, failed: t.files.failed + 1 } };
}

export function addSkipped(t: RunTotals, n: number): RunTotals {
  return { ...t, files: { ...t.files, skipped: t.files.skipped + n } };
}

/**
 * What a problem with one object means for the run:
 * - `file`: this object can never go in as it is (unparsable, over the
 *   stream's limits, batch id reused with other bytes, source disabled):
 *   recorded against the file, the run goes on;
 * - `run`: the stream is gone: the run fails;
 * - `transient`: it may pass (busy, a failed micro-batch, a dropped
 *   connection): the same object is tried again at a later alarm, as a
 *   replay if it committed.
 */
export type FileProblem = { kind: "file" | "run" | "transient"; detail: string };
export type FileVerdict = { kind: "done"; outcome: BatchOutcome } | FileProblem;

/** The files adapter's mapper: what a submitted object's result means for its run. */
export function fileVerdict(r: SubmitResult): FileVerdict {
  switch (r.kind) {
    case "committed":
    case "replayed":
      return { kind: "done", outcome: r.outcome };
    case "missing":
      return { kind: "run", detail: r.detail };
    case "unauthorized":
    case "forbidden":
    case "too-large":
    case "conflict":
    case "invalid":
      return { kind: "file", detail: r.detail };
    case "busy":
    case "failed":
      return { kind: "transient", detail: r.detail };
    default:
      return exhaustive(r);
  }
}

/**
 * An error thrown while reading an object: an HttpError is what an HTTP
 * ingest of those bytes would be refused with (unparsable, over the limits),
 * so the file's; anything else (R2, a dropped connection) may pass.
 */
export function judgeError(e: unknown): FileProblem {
  const detail = e instanceof Error ? e.message : String(e);
  return { kind: e instanceof HttpError ? "file" : "transient", detail };
}

/** The wait before retrying after a transient error: 1 s, 2 s, 4 s, … up to a minute. */
export function retryDelayMs(attempts: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, attempts - 1));
}

export function keepError(errors: readonly { key: string; detail: string }[], key: string, detail: string): { key: string; detail: string }[] {
  return errors.length >= MAX_ERRORS ? [...errors] : [...errors, { key, detail: detail.slice(0, 500) }];
}

export type RunStatus = "running" | "done" | "failed";

/**
 * Where a run's output must be readable before the run is done (DESIGN §7,
 * Spark's processAllAvailable()): once every file is settled, the run notes
 * the stream's last commit and waits until /output (at once), the committed
 * manifest and, with a table, the table's current snapshot hold it.
 */
export interface RunPublication {
  /** the stream's last commit once the run had settled its files */
  commitSeq: number;
  /** the last commit each place holds (null: no table) */
  manifest: number;
  table: number | null;
  /** the table snapshot the run waited for (with a table, once published) */
  snapshot: { "snapshot-id": number; "sequence-number": number; "total-records": number; "commit-seq": number } | null;
  /** when the wait began (ms) */
  since: number;
  /** a stream with several shards: the figures above count commits over them, and each shard's own are waited for (no shard's progress stands in for another's) */
  shards?: { commitSeq: number; manifest: number; table: number | null }[];
}

/** How far a stream's output is published, as its Coordinator says (src/coordinator/protocol.ts StreamPublication). */
type StreamPublication = {
  committed: number;
  manifest: number;
  table: number | null;
  shards?: { committed: number; manifest: number; table: number | null }[];
};

/** The wait a run begins once its files are settled: the stream's publication now (each shard's own too, with several). */
export function publicationWait(p: StreamPublication, now: number): RunPublication {
  return {
    commitSeq: p.committed,
    manifest: p.manifest,
    table: p.table,
    snapshot: null,
    since: now,
    ...(p.shards ? { shards: p.shards.map((s) => ({ commitSeq: s.committed, manifest: s.manifest, table: s.table })) } : {}),
  };
}

/** What a later look at the stream's publication says of the places a run waits for. */
export function heard(wait: RunPublication, p: StreamPublication): void {
  wait.manifest = p.manifest;
  wait.table = p.table;
  wait.shards?.forEach((s, k) => {
    s.manifest = p.shards?.[k]?.manifest ?? s.manifest;
    s.table = p.shards?.[k]?.table ?? s.table;
  });
}

/** A run gives up waiting for publication after this long (its rows are committed; only readers outside lag). */
export const PUBLISH_WAIT_MS = 5 * 60_000;
/** How often a waiting run looks again. */
export const PUBLISH_POLL_MS = 250;

/** Whether what a run committed is readable everywhere yet: done, wait more, or give up. */
export function publicationState(
  p: Pick<RunPublication, "commitSeq" | "manifest" | "table" | "since" | "shards">,
  now: number,
): "published" | "waiting" | "timed-out" {
  const holds = (s: { commitSeq: number; manifest: number; table: number | null }) => s.manifest >= s.commitSeq && (s.table === null || s.table >= s.commitSeq);
  if (p.shards ? p.shards.every(holds) : holds(p)) return "published";
  return now - p.since >= PUBLISH_WAIT_MS ? "timed-out" : "waiting";
}

export function publicationLag(p: RunPublication): string {
  const behind = [
    p.manifest < p.commitSeq ? `the manifest holds commit ${p.manifest}` : null,
    p.table !== null && p.table < p.commitSeq ? `the table holds commit ${p.table}` : null,
  ];
  return `commit ${p.commitSeq} is committed and in /output, but after ${PUBLISH_WAIT_MS / 60_000} minutes ${behind.filter(Boolean).join(" and ")}; the rows are safe: a later run (or GET …/table) shows when it catches up`;
}

/** Where cleanSource "archive" moves an ingested object (Spark keeps the source path under the archive dir). */
export const archiveKey = (dir: string, key: string) => dir + key;

/** The objects an alarm takes go in micro-batches of this many (maxFilesPerTrigger; default one file per commit). */
export function groupsOf<T>(items: readonly T[], perGroup = 1): T[][] {
  const n = Math.max(1, perGroup);
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += n) out.push(items.slice(i, i + n));
  return out;
}

/** GET …/runs/{id}. `files.left`: listed and not yet taken (while `listed` is false, more may come). */
export interface RunView {
  id: string;
  status: RunStatus;
  prefix: string;
  source: string;
  listed: boolean;
  files: { done: number; left: number; skipped: number; failed: number; replayed: number };
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
  errors: { key: string; detail: string }[];
  startedAt: number;
  finishedAt: number | null;
  /** how the files are read and cleaned (the run's body, defaults left out) */
  options: RunOptions;
  /** null while files are being ingested; then what done waits for (RunPublication) */
  publication: Omit<RunPublication, "since"> | null;
}

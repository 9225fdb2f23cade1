/** What a run did, per file and in total: a table for people, JSON for scripts. */
import type { SkippedFile } from "./walk.ts";
import type { Outcome } from "./sender.ts";
import type { Published } from "./wait.ts";

export const COUNTS = ["batches", "rows", "emitted", "duplicates", "late", "rejected", "replayed", "failed"] as const;
export type Count = (typeof COUNTS)[number];
export type Counts = Record<Count, number>;

export interface FileReport extends Counts {
  path: string;
  /** why batches failed (or why the file could not be read), one line each */
  errors: string[];
}

export interface Summary {
  ok: boolean;
  stream: string;
  source: string;
  files: FileReport[];
  skipped: SkippedFile[];
  totals: Counts & { files: number };
  elapsedMs: number;
  /** what the wait for publication found (null: not waited, --no-wait, or the service cannot say) */
  published: Published | null;
  /** what to do next when something failed */
  advice: string[];
}

export const emptyCounts = (): Counts => ({ batches: 0, rows: 0, emitted: 0, duplicates: 0, late: 0, rejected: 0, replayed: 0, failed: 0 });

/**
 * Adds a committed batch's outcome to its file's counts. A batch replayed at
 * its first attempt was committed by an earlier run: it counts as replayed
 * only, and its recorded counts are not added again (they are not new
 * output). A replay after a retry is this run's own commit whose answer was
 * lost (a 503, a timeout): its rows are counted as committed now.
 */
export function addOutcome(report: FileReport, o: Outcome, attempts = 1): void {
  if (o.replayed && attempts === 1) {
    report.replayed++;
    return;
  }
  report.emitted += o.emitted;
  report.duplicates += o.duplicates;
  report.late += o.late;
  report.rejected += o.rejected;
}

/** Why batches failed, as far as the advice goes: answers that stop the run, refusals of a batch as it is, and what may pass. */
export interface Failures {
  /** the answer that stopped the run (401, 403, 404) */
  stopped: { error: string; status?: number } | null;
  /** 400, 413, 422…: the same bytes get the same refusal */
  refused: number;
  /** gave up after retries (5xx, no answer): may pass */
  transient: number;
  /** files that could not be read or parsed */
  files: number;
  /** files skipped that look like data this command cannot read (SkippedFile.data): not sent, so the run fails */
  unread: number;
}

export const noFailures = (): Failures => ({ stopped: null, refused: 0, transient: 0, files: 0, unread: 0 });

export function summarize(
  stream: string,
  source: string,
  files: FileReport[],
  skipped: SkippedFile[],
  elapsedMs: number,
  failures: Failures = noFailures(),
  published: Published | null = null,
): Summary {
  const totals = { files: files.length, ...emptyCounts() };
  for (const f of files) for (const c of COUNTS) totals[c] += f[c];
  const unread = skipped.filter((k) => k.data).length;
  const s: Summary = { ok: totals.failed === 0 && unread === 0, stream, source, files, skipped, totals, elapsedMs, published, advice: [] };
  s.advice = adviceFor(s, { ...failures, unread });
  return s;
}

/** What to do next, fitting what went wrong (never "run it again" for an answer that would be the same). */
export function adviceFor(s: Pick<Summary, "ok" | "stream" | "source">, f: Failures): string[] {
  if (s.ok) return [];
  const out: string[] = [];
  const status = f.stopped?.status;
  if (status === 401 || status === 403) {
    out.push(
      `the service refused the credential (HTTP ${status}), so the rest was not sent: check --token / EDGE_DEDUP_TOKEN (the admin token, or a token of source "${s.source}") and that the source is not disabled; then run the same command again (committed batches replay)`,
    );
  } else if (status === 404) {
    out.push(
      `stream "${s.stream}" does not exist there (HTTP 404), so the rest was not sent: check --url and --stream, or create it (PUT /v1/streams/${s.stream}); then run the same command again`,
    );
  } else if (f.stopped) out.push(`the run stopped at "${f.stopped.error}"`);
  if (f.files > 0)
    out.push(
      `fix the file${f.files === 1 ? "" : "s"} named under errors (nothing of ${f.files === 1 ? "it" : "them"} was sent), then run the same command again`,
    );
  if (f.refused > 0) {
    out.push(
      `${f.refused} batch${f.refused === 1 ? " was" : "es were"} refused as sent (see errors): sending the same bytes again gets the same answer; fix the rows, or use smaller --batch-rows / --max-body-bytes for a 413`,
    );
  }
  if (f.unread > 0) {
    const them = f.unread === 1 ? "it" : "them";
    out.push(
      `${f.unread} file${f.unread === 1 ? " looks" : "s look"} like data this command cannot read (see "not read"), so nothing of ${them} was sent: decompress ${them} (gzip, .gz, is read) or convert ${them} to .json / .ndjson / .jsonl, then run the same command again (committed batches replay)`,
    );
  }
  if (f.transient > 0)
    out.push(
      `${f.transient} batch${f.transient === 1 ? "" : "es"} failed for a reason that may pass: run the same command again to retry (committed batches replay)`,
    );
  return out;
}

const fmt = (n: number) => n.toLocaleString("en-US");

export function renderTable(s: Summary): string {
  const head = ["file", ...COUNTS];
  const body = s.files.map((f) => [f.path, ...COUNTS.map((c) => fmt(f[c]))]);
  const total = [`total (${s.totals.files} file${s.totals.files === 1 ? "" : "s"})`, ...COUNTS.map((c) => fmt(s.totals[c]))];
  const all = [head, ...body, total];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  const out = [line(head), rule, ...body.map(line), rule, line(total)];
  out.push(...skippedLines(s.skipped));
  const errors = s.files.flatMap((f) => f.errors.map((e) => `  ${f.path}: ${e}`));
  if (errors.length > 0) out.push("", "errors:", ...errors);
  const secs = (s.elapsedMs / 1000).toFixed(1);
  const t = s.totals;
  const now = t.batches - t.replayed - t.failed;
  const sentNow = `${fmt(now)} committed now (${fmt(t.emitted)} emitted, ${fmt(t.duplicates)} duplicates, ${fmt(t.late)} late, ${fmt(t.rejected)} rejected)`;
  const replayed = `${fmt(t.replayed)} replayed (committed by an earlier run: nothing new, not counted again)`;
  const unread = s.skipped.filter((k) => k.data).length;
  const outcome =
    t.failed === 0
      ? `all ${fmt(t.batches)} batches committed (${fmt(t.replayed)} replayed) to stream ${s.stream} in ${secs} s`
      : `${fmt(t.failed)} of ${fmt(t.batches)} batches failed`;
  out.push("", unread === 0 ? outcome : `${outcome}; ${fmt(unread)} file${unread === 1 ? "" : "s"} of data not read`);
  out.push(`  ${sentNow}`, `  ${replayed}`);
  if (s.published) out.push(`  ${publishedLine(s.published)}`);
  for (const a of s.advice) out.push(`  ${a}`);
  return out.join("\n") + "\n";
}

/** Skipped files the table names one by one at most; past them a count (--json lists every one). Data not read is always named. */
export const SKIPPED_SHOWN = 20;

/** The data not read, each named; then what was skipped harmlessly (bookkeeping, other files), each named up to SKIPPED_SHOWN. */
function skippedLines(skipped: readonly SkippedFile[]): string[] {
  const out: string[] = [];
  const line = (k: SkippedFile) => `  ${k.rel} (${k.reason}${k.files === undefined ? "" : `; ${fmt(k.files)} file${k.files === 1 ? "" : "s"} in it`})`;
  const unread = skipped.filter((k) => k.data);
  if (unread.length > 0)
    out.push("", `not read: ${unread.length} file${unread.length === 1 ? "" : "s"} of data this command cannot read, so the run fails:`, ...unread.map(line));
  const rest = skipped.filter((k) => !k.data);
  if (rest.length > 0) {
    const n = rest.reduce((sum, k) => sum + (k.files ?? 1), 0);
    out.push("", `skipped ${fmt(n)} file${n === 1 ? "" : "s"}:`, ...rest.slice(0, SKIPPED_SHOWN).map(line));
    if (rest.length > SKIPPED_SHOWN) out.push(`  … and ${fmt(rest.length - SKIPPED_SHOWN)} more (--json lists every one)`);
  }
  return out;
}

export function renderJson(s: Summary): string {
  return JSON.stringify(s, null, 2) + "\n";
}

function publishedLine(p: Published): string {
  const where = p.table === null ? "/output and the committed manifest" : "/output, the committed manifest and the table";
  if (!p.caughtUp)
    return `after ${(p.waitedMs / 1000).toFixed(0)} s the manifest holds commit ${p.manifest}${p.table === null ? "" : ` and the table commit ${p.table}`}, not yet ${p.commitSeq}: the rows are committed; readers outside see them shortly`;
  const snap = p.snapshot ? ` (table snapshot ${p.snapshot["snapshot-id"]}, ${fmt(p.snapshot["total-records"])} records)` : "";
  return `readable in ${where} up to commit ${p.commitSeq}${snap}`;
}

/** What a run did, per file and in total: a table for people, JSON for scripts. */
import type { SkippedFile } from "./walk.ts";
import type { Outcome } from "./sender.ts";

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
}

export const emptyCounts = (): Counts => ({ batches: 0, rows: 0, emitted: 0, duplicates: 0, late: 0, rejected: 0, replayed: 0, failed: 0 });

/** Adds a committed batch's outcome to its file's counts. */
export function addOutcome(report: FileReport, o: Outcome): void {
  report.emitted += o.emitted;
  report.duplicates += o.duplicates;
  report.late += o.late;
  report.rejected += o.rejected;
  if (o.replayed) report.replayed++;
}

export function summarize(stream: string, source: string, files: FileReport[], skipped: SkippedFile[], elapsedMs: number): Summary {
  const totals = { files: files.length, ...emptyCounts() };
  for (const f of files) for (const c of COUNTS) totals[c] += f[c];
  return { ok: totals.failed === 0, stream, source, files, skipped, totals, elapsedMs };
}

const fmt = (n: number) => n.toLocaleString("en-US");

export function renderTable(s: Summary): string {
  const head = ["file", ...COUNTS];
  const body = s.files.map((f) => [f.path, ...COUNTS.map((c) => fmt(f[c]))]);
  const total = [`total (${s.totals.files} file${s.totals.files === 1 ? "" : "s"})`, ...COUNTS.map((c) => fmt(s.totals[c]))];
  const all = [head, ...body, total];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join("  ").trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  const out = [line(head), rule, ...body.map(line), rule, line(total)];
  if (s.skipped.length > 0) {
    out.push("", `skipped ${s.skipped.length} file${s.skipped.length === 1 ? "" : "s"}:`);
    for (const k of s.skipped) out.push(`  ${k.rel} (${k.reason})`);
  }
  const errors = s.files.flatMap((f) => f.errors.map((e) => `  ${f.path}: ${e}`));
  if (errors.length > 0) out.push("", "errors:", ...errors);
  const secs = (s.elapsedMs / 1000).toFixed(1);
  out.push(
    "",
    s.ok
      ? `all ${fmt(s.totals.batches)} batches committed (${fmt(s.totals.replayed)} replayed) to stream ${s.stream} in ${secs} s`
      : `${fmt(s.totals.failed)} of ${fmt(s.totals.batches)} batches failed; run the same command again to retry them (committed batches replay)`,
  );
  return out.join("\n") + "\n";
}

export function renderJson(s: Summary): string {
  return JSON.stringify(s, null, 2) + "\n";
}

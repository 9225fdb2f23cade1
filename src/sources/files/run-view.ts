import type { RunView } from "./plan";
import type { Run } from "./runs";

/** What GET …/runs/{id} answers of `run`, with `left` files still to ingest. Pure. */
export function runView(run: Run, left: number): RunView {
  const { totals: t } = run;
  return {
    id: run.id,
    status: run.status,
    prefix: run.prefix,
    source: run.source,
    listed: run.listed === 1,
    files: { done: t.files.done, left, skipped: t.files.skipped, failed: t.files.failed, replayed: t.files.replayed },
    input: t.input,
    emitted: t.emitted,
    duplicates: t.duplicates,
    late: t.late,
    rejected: t.rejected,
    errors: run.errors,
    startedAt: run.started_at,
    finishedAt: run.finished_at,
    options: run.options,
    publication: run.publication && {
      commitSeq: run.publication.commitSeq,
      manifest: run.publication.manifest,
      table: run.publication.table,
      snapshot: run.publication.snapshot,
    },
  };
}

import { emptyTotals, type RunPublication, type RunStatus, type RunTotals } from "./plan";
import type { RunOptions } from "./run-body";

/** A run as the `runs` table holds it (its totals, errors, options and publication as JSON text). */
export type RunRow = {
  id: string;
  prefix: string;
  source: string;
  epoch: string;
  status: RunStatus;
  cursor: string | null;
  listed: number;
  totals: string;
  errors: string;
  attempts: number;
  started_at: number;
  finished_at: number | null;
  options: string;
  publication: string | null;
};
export type Run = Omit<RunRow, "totals" | "errors" | "options" | "publication"> & {
  totals: RunTotals;
  errors: { key: string; detail: string }[];
  options: RunOptions;
  publication: RunPublication | null;
};

/** Finished runs kept for GET …/runs/{id}. */
const KEEP_RUNS = 100;

/** The stream's file runs, in the order they started (`seq`); the last KEEP_RUNS finished ones are kept. */
export class Runs {
  constructor(private readonly sql: SqlStorage) {}

  /** A new run, running, after every other; finished ones beyond KEEP_RUNS go. */
  add(id: string, prefix: string, source: string, epoch: string, options: RunOptions, now: number): void {
    this.sql.exec(
      `INSERT INTO runs (id, seq, prefix, source, epoch, status, cursor, listed, totals, errors, attempts, started_at, finished_at, options, publication)
       VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM runs), ?, ?, ?, 'running', NULL, 0, ?, '[]', 0, ?, NULL, ?, NULL)`,
      id,
      prefix,
      source,
      epoch,
      JSON.stringify(emptyTotals()),
      now,
      JSON.stringify(options),
    );
    this.sql.exec("DELETE FROM runs WHERE status <> 'running' AND seq <= (SELECT max(seq) FROM runs) - ?", KEEP_RUNS);
  }

  get(id: string): Run | null {
    const row = this.sql.exec<RunRow>("SELECT * FROM runs WHERE id = ?", id).toArray()[0];
    return row ? parse(row) : null;
  }

  /** The run as stored now (it must exist). */
  current(id: string): Run {
    return parse(this.sql.exec<RunRow>("SELECT * FROM runs WHERE id = ?", id).one());
  }

  /** The oldest running run, or null. */
  oldestRunning(): Run | null {
    const row = this.sql.exec<RunRow>("SELECT * FROM runs WHERE status = 'running' ORDER BY seq LIMIT 1").toArray()[0];
    return row ? parse(row) : null;
  }

  anyRunning(): boolean {
    return this.sql.exec("SELECT 1 FROM runs WHERE status = 'running' LIMIT 1").toArray().length > 0;
  }

  /** A page listed: the run's listing cursor, whether listing is over, and its totals. */
  saveListing(run: Run): void {
    this.sql.exec("UPDATE runs SET cursor = ?, listed = ?, totals = ? WHERE id = ?", run.cursor, run.listed, JSON.stringify(run.totals), run.id);
  }

  /** A file settled: the run's totals and errors, its transient attempts back to 0. */
  saveSettled(run: Run): void {
    this.sql.exec("UPDATE runs SET totals = ?, errors = ?, attempts = 0 WHERE id = ?", JSON.stringify(run.totals), JSON.stringify(run.errors), run.id);
  }

  /** Every file settled: the publication the run waits for, its transient attempts back to 0. */
  beginPublication(run: Run): void {
    this.sql.exec("UPDATE runs SET publication = ?, attempts = 0 WHERE id = ?", JSON.stringify(run.publication), run.id);
  }

  savePublication(id: string, publication: RunPublication): void {
    this.sql.exec("UPDATE runs SET publication = ? WHERE id = ?", JSON.stringify(publication), id);
  }

  setAttempts(id: string, attempts: number): void {
    this.sql.exec("UPDATE runs SET attempts = ? WHERE id = ?", attempts, id);
  }

  finish(id: string, status: "done" | "failed", errors: Run["errors"], at: number): void {
    this.sql.exec("UPDATE runs SET status = ?, errors = ?, finished_at = ?, cursor = NULL WHERE id = ?", status, JSON.stringify(errors), at, id);
  }
}

function parse(row: RunRow): Run {
  return {
    ...row,
    totals: JSON.parse(row.totals) as RunTotals,
    errors: JSON.parse(row.errors) as Run["errors"],
    options: JSON.parse(row.options ?? "{}") as RunOptions,
    publication: row.publication ? (JSON.parse(row.publication) as RunPublication) : null,
  };
}

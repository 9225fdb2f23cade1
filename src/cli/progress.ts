/**
 * Progress on stderr: a bar redrawn in place when stderr is a terminal, a
 * plain line every few seconds otherwise (logs, CI), nothing with --quiet.
 */

export interface ProgressState {
  filesDone: number;
  filesTotal: number;
  rowsDone: number;
  rowsTotal: number;
  batchesFailed: number;
}

export interface ProgressSink {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Progress {
  /** the state changed; redraws when due */
  update(): void;
  /** a message that must not be drawn over (a retry, a failure) */
  note(text: string): void;
  /** the final state; clears the bar */
  finish(): void;
}

const fmt = (n: number) => n.toLocaleString("en-US");

export function describeProgress(s: ProgressState, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? Math.round((s.rowsDone * 1000) / elapsedMs) : 0;
  const failed = s.batchesFailed > 0 ? `, ${fmt(s.batchesFailed)} failed` : "";
  return `files ${fmt(s.filesDone)}/${fmt(s.filesTotal)}, rows ${fmt(s.rowsDone)}/${fmt(s.rowsTotal)}, ${fmt(rate)} rows/s${failed}`;
}

export function bar(fraction: number, width: number): string {
  const f = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 1));
  const full = Math.round(f * width);
  return `[${"#".repeat(full)}${".".repeat(width - full)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
}

export function createProgress(state: ProgressState, sink: ProgressSink, opts: { quiet: boolean; now?: () => number; intervalMs?: number }): Progress {
  const now = opts.now ?? Date.now;
  const started = now();
  if (opts.quiet) return { update() {}, note() {}, finish() {} };

  if (sink.isTTY) {
    let last = 0;
    let drawn = false;
    const draw = () => {
      const fraction = state.rowsTotal > 0 ? state.rowsDone / state.rowsTotal : state.filesTotal > 0 ? state.filesDone / state.filesTotal : 1;
      const text = `${bar(fraction, 24)} ${describeProgress(state, now() - started)}`;
      sink.write(`\r\x1b[2K${text.slice(0, Math.max(20, (sink.columns ?? 120) - 1))}`);
      drawn = true;
      last = now();
    };
    return {
      update() {
        if (now() - last >= 100) draw();
      },
      note(text) {
        sink.write(`${drawn ? "\r\x1b[2K" : ""}${text}\n`);
        draw();
      },
      finish() {
        draw();
        sink.write("\n");
      },
    };
  }

  const every = opts.intervalMs ?? 5_000;
  let last = started;
  const line = () => sink.write(`edge-dedup: ${describeProgress(state, now() - started)}\n`);
  return {
    update() {
      if (now() - last >= every) {
        last = now();
        line();
      }
    },
    note(text) {
      sink.write(`edge-dedup: ${text}\n`);
    },
    finish() {
      line();
    },
  };
}

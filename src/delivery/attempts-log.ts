/**
 * What each attempt of a row was: when it started, how long it took, the
 * status the handler answered (null: no answer) and the error, never the
 * row's bytes. A row keeps its last ATTEMPTS_KEPT in its `tries` column while
 * it is pending or dead; a delivered row's go to the `recent` ring (the last
 * RECENT_ROWS delivered rows, ./recent.ts). Pure.
 */
export interface AttemptRecord {
  at: number;
  ms: number;
  status: number | null;
  error: string | null;
}

export const ATTEMPTS_KEPT = 5;

/** The row's attempts after one more (the oldest beyond ATTEMPTS_KEPT go). */
export function withAttempt(tries: string | null, attempt: AttemptRecord): string {
  const list = parseAttempts(tries);
  list.push(attempt);
  return JSON.stringify(list.slice(-ATTEMPTS_KEPT));
}

export function parseAttempts(tries: string | null | undefined): AttemptRecord[] {
  if (!tries) return [];
  try {
    const list = JSON.parse(tries);
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

import { afterFailure, type Verdict } from "./attempt";
import { withAttempt, type AttemptRecord } from "./attempts-log";
import type { DestRow, PendingRow } from "./store";
import type { DestinationTables } from "./tables";

/** One attempt of one row: the row as it was sent, what its answer means, and the attempt as it is kept. */
export interface Outcome {
  row: PendingRow;
  verdict: Verdict;
  attempt: AttemptRecord;
}

/**
 * Records attempts' outcome (in the caller's transaction): delivered rows
 * leave (their attempts to the ring of recent deliveries), failed ones get
 * their next attempt or go to the dead lane, and the destination's counters
 * (and a gone endpoint's pause) are updated.
 */
export function recordOutcomes(
  t: Pick<DestinationTables, "record" | "pending" | "dead" | "recent">,
  d: DestRow,
  outcomes: readonly Outcome[],
  now: number,
): void {
  let delivered = 0;
  let failed = 0;
  let lastError: string | null = null;
  let gone: string | null = null;
  let slot = t.record.read()?.delivered ?? 0;
  for (const { row: r, verdict, attempt } of outcomes) {
    // A replay or delete meanwhile may have taken the row away (or back): only the row as it was is updated.
    if (t.pending.attemptsOf(r.seq, r.idx) !== r.attempts) continue;
    const tries = withAttempt(r.tries, attempt);
    if (verdict.kind === "delivered") {
      t.pending.remove(r.seq, r.idx);
      t.recent.put(slot++, r.seq, r.idx, now, tries);
      delivered++;
      continue;
    }
    failed++;
    lastError = verdict.error;
    if (verdict.kind === "gone") gone = verdict.error;
    const firstAt = r.first_at ?? attempt.at;
    const failures = r.attempts + 1;
    const next = afterFailure(verdict, { failures, firstAttemptAt: firstAt }, d.config, now, Math.random);
    if (next === "dead") {
      t.dead.add(r, failures, verdict.error, now, tries);
      t.pending.remove(r.seq, r.idx);
      t.record.countDied();
      t.dead.trim();
    } else {
      t.pending.retryAt(r.seq, r.idx, failures, firstAt, next.at, verdict.error, tries);
    }
  }
  if (delivered > 0) t.record.countDelivered(delivered, now);
  if (failed > 0 && lastError !== null) t.record.countFailures(failed, lastError, now);
  if (gone !== null) t.record.pause(gone);
}

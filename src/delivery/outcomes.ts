import { afterFailure, type Verdict } from "./attempt";
import type { DestRow, PendingRow } from "./store";
import type { DestinationTables } from "./tables";

/** How a sender reports attempts' outcome (the Destination records it in a transaction). */
export type RecordOutcome = (rows: PendingRow[], verdict: Verdict, sentAt: number) => void;

/**
 * Records attempts' outcome (in the caller's transaction): delivered rows
 * leave, failed ones get their next attempt or go to the dead lane, and the
 * destination's counters (and a gone endpoint's pause) are updated.
 */
export function recordOutcome(
  t: Pick<DestinationTables, "record" | "pending" | "dead">,
  d: DestRow,
  rows: PendingRow[],
  verdict: Verdict,
  sentAt: number,
  now: number,
): void {
  for (const r of rows) {
    // A replay or delete meanwhile may have taken the row away (or back): only the row as it was is updated.
    if (t.pending.attemptsOf(r.seq, r.idx) !== r.attempts) continue;
    if (verdict.kind === "delivered") {
      t.pending.remove(r.seq, r.idx);
      continue;
    }
    const firstAt = r.first_at ?? sentAt;
    const failures = r.attempts + 1;
    const next = afterFailure(verdict, { failures, firstAttemptAt: firstAt }, d.config, now, Math.random);
    if (next === "dead") {
      t.dead.add(r, failures, verdict.error, now);
      t.pending.remove(r.seq, r.idx);
      t.record.countDied();
      t.dead.trim();
    } else {
      t.pending.retryAt(r.seq, r.idx, failures, firstAt, next.at, verdict.error);
    }
  }
  if (verdict.kind === "delivered") {
    t.record.countDelivered(rows.length, now);
  } else {
    t.record.countFailures(rows.length, verdict.error, now);
    if (verdict.kind === "gone") t.record.pause(verdict.error);
  }
}

import { parseAttempts } from "./attempts-log";
import { webhookId } from "./message";
import type { RowAttempts } from "./protocol";
import type { DestRow } from "./store";
import type { DestinationTables } from "./tables";

/**
 * A row's attempts as GET …/attempts shows them: pending (with when the next
 * is due), dead, or delivered (while it is among the last RECENT_ROWS
 * delivered, ./recent.ts). Null: the destination keeps nothing for that place.
 */
export function rowAttempts(t: Pick<DestinationTables, "pending" | "dead" | "recent">, d: DestRow, seq: number, index: number): RowAttempts | null {
  const id = webhookId(d.stream, seq, index, d.incarnation);
  const pending = t.pending.find(seq, index);
  if (pending) return { id, seq, index, state: "pending", attempts: parseAttempts(pending.tries), nextAt: pending.next_at };
  const dead = t.dead.find(seq, index);
  if (dead) return { id, seq, index, state: "dead", attempts: dead.attempts, at: dead.diedAt };
  const delivered = t.recent.find(seq, index);
  if (delivered) return { id, seq, index, state: "delivered", attempts: delivered.attempts, at: delivered.deliveredAt };
  return null;
}

/** The rows worth a look, at most `limit`: the failing pending ones first, then the newest dead, then the newest delivered. */
export function recentAttempts(t: Pick<DestinationTables, "pending" | "dead" | "recent">, d: DestRow, limit: number): RowAttempts[] {
  const id = (seq: number, index: number) => webhookId(d.stream, seq, index, d.incarnation);
  const out: RowAttempts[] = t.pending.failing(limit).map((r) => ({
    id: id(r.seq, r.idx),
    seq: r.seq,
    index: r.idx,
    state: "pending" as const,
    attempts: parseAttempts(r.tries),
    nextAt: r.next_at,
  }));
  if (out.length < limit)
    for (const r of t.dead.newest(limit - out.length))
      out.push({ id: id(r.seq, r.idx), seq: r.seq, index: r.idx, state: "dead", attempts: r.attempts, at: r.diedAt });
  if (out.length < limit)
    for (const r of t.recent.newest(limit - out.length))
      out.push({ id: id(r.seq, r.idx), seq: r.seq, index: r.idx, state: "delivered", attempts: r.attempts, at: r.deliveredAt });
  return out;
}

import type { Env } from "../env";
import type { Verdict } from "./attempt";
import { queueMessage } from "./message";
import type { Outcome } from "./outcomes";
import type { DestRow, PendingRow } from "./store";

/** Queue messages per sendBatch (the Queues limit is 100 messages and 256 KB): a lane's share of a dispatch. */
export const QUEUE_BATCH = 100;
const QUEUE_BATCH_BYTES = 200 * 1024;
/** Room for the message's other fields within the Queues limit of 128 KB per message. */
const MAX_QUEUE_ROW_BYTES = 120 * 1024;

/** Sends a lane's rows to the Queues producer `binding`, in batches within the Queues limits; how each row went. */
export async function sendQueueChunk(env: Env, d: DestRow, binding: string, all: PendingRow[]): Promise<Outcome[]> {
  const queue = (env as unknown as Record<string, Queue | undefined>)[binding];
  const outcomes: Outcome[] = [];
  const settle = (rows: PendingRow[], verdict: Verdict, at: number) => {
    const attempt = { at, ms: Date.now() - at, status: null, error: verdict.kind === "delivered" ? null : verdict.error };
    for (const row of rows) outcomes.push({ row, verdict, attempt });
  };
  // A message is at most 128 KB: a larger row can never be sent, and must not hold its neighbours back.
  const rows = all.filter((r) => r.row.length <= MAX_QUEUE_ROW_BYTES);
  const oversized = all.filter((r) => r.row.length > MAX_QUEUE_ROW_BYTES);
  if (oversized.length > 0)
    settle(oversized, { kind: "undeliverable", error: `the row is larger than a queue message can be (${MAX_QUEUE_ROW_BYTES} bytes)` }, Date.now());
  for (let i = 0; i < rows.length; ) {
    const chunk: PendingRow[] = [];
    let bytes = 0;
    while (i < rows.length && chunk.length < QUEUE_BATCH && (chunk.length === 0 || bytes + rows[i].row.length < QUEUE_BATCH_BYTES)) {
      bytes += rows[i].row.length;
      chunk.push(rows[i++]);
    }
    const at = Date.now();
    let verdict: Verdict;
    try {
      if (!queue || typeof queue.sendBatch !== "function") throw new Error(`the binding ${binding} is not a Queues producer of this Worker`);
      await queue.sendBatch(
        chunk.map((r) => ({ body: queueMessage(d.stream, r.seq, r.idx, JSON.parse(r.row), r.committed_at, d.incarnation), contentType: "json" as const })),
      );
      verdict = { kind: "delivered" };
    } catch (e) {
      verdict = { kind: "retry", error: `sendBatch failed: ${(e as Error).message}`, retryAfterMs: null };
    }
    settle(chunk, verdict, at);
  }
  return outcomes;
}

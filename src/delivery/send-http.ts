import type { Env } from "../env";
import { describeError, judge, type Answer } from "./attempt";
import type { DestinationConfig } from "./config";
import { messageBody, signedHeaders, webhookId } from "./message";
import type { RecordOutcome } from "./outcomes";
import type { DestRow, PendingRow } from "./store";
import { checkDestinationUrl } from "./url";

/** HTTP attempts in flight at once within a round. */
const CONCURRENCY = 8;

/** POSTs each row, signed, CONCURRENCY at a time, recording each attempt as it ends; a gone endpoint stops its worker. */
export async function sendHttp(
  env: Env,
  d: DestRow,
  config: Extract<DestinationConfig, { type: "http" }>,
  rows: PendingRow[],
  openSecrets: () => Promise<string[]>,
  record: RecordOutcome,
): Promise<void> {
  // Checked again before each round: a URL stored under older rules (or a loopback one once the var is off) is never fetched.
  const target = checkDestinationUrl(config.url, env.ALLOW_LOOPBACK_DESTINATIONS === "true");
  if (!target.ok) {
    const error = `not sent: the destination's url is refused (${target.reason}); PUT it again with a public https:// URL`;
    record(rows, { kind: "retry", error, retryAfterMs: null }, Date.now());
    return;
  }
  const secrets = await openSecrets();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < rows.length; i = next++) {
      const r = rows[i];
      const id = webhookId(d.stream, r.seq, r.idx, d.incarnation);
      const body = messageBody(JSON.parse(r.row), r.committed_at);
      const sentAt = Date.now();
      let answer: Answer;
      try {
        const res = await fetch(target.url, {
          method: "POST",
          headers: await signedHeaders(secrets, id, sentAt, body),
          body,
          redirect: "manual",
          signal: AbortSignal.timeout(config.timeoutMs),
        });
        answer = { status: res.status, retryAfter: res.headers.get("retry-after") };
        await res.body?.cancel();
      } catch (e) {
        answer = { error: describeError(e, config.timeoutMs) };
      }
      const verdict = judge(answer, Date.now());
      record([r], verdict, sentAt);
      if (verdict.kind === "gone") return;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, rows.length) }, worker));
}

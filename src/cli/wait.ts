/**
 * After the batches are sent, `edge-dedup send` waits, as a file run does
 * (DESIGN §7, Spark's processAllAvailable()), until what it committed is
 * readable everywhere the stream writes: GET …/output, the committed manifest
 * and, with a table, the table's current snapshot (GET …/publication).
 */
import { createClient } from "../client/index.ts";
import type { SendDeps, Target } from "./sender.ts";

export interface Published {
  /** the stream's last commit when the sending ended: every batch of this run is at or before it */
  commitSeq: number;
  manifest: number;
  table: number | null;
  snapshot: { "snapshot-id": number; "sequence-number": number; "total-records": number; "commit-seq": number } | null;
  /** true when every place holds commitSeq; false: gave up waiting (the rows are committed all the same) */
  caughtUp: boolean;
  waitedMs: number;
}

export const WAIT_POLL_MS = 250;

type Figures = { committed: number; manifest: number; table: number | null };
/** `shards`: a stream with several, each one's own figures (the top ones count commits over them) */
type View = Figures & { snapshot: Published["snapshot"]; shards?: Figures[] };

function viewOf(text: string): View | null {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    const int = (x: unknown) => typeof x === "number" && Number.isInteger(x);
    if (!int(v.committed) || !int(v.manifest) || !(v.table === null || int(v.table))) return null;
    return v as unknown as View;
  } catch {
    return null;
  }
}

/** Polls until the manifest and the table hold the last commit; null when the service cannot say (an older one). */
export async function waitPublished(target: Target, deps: SendDeps, timeoutMs: number, note: (text: string) => void): Promise<Published | null> {
  const client = createClient({ baseUrl: target.url, token: target.token, fetch: deps.fetch });
  const path = `/v1/streams/${encodeURIComponent(target.stream)}/publication`;
  const started = deps.now();
  let commitSeq: number | null = null;
  let perShard: number[] | null = null;
  let noted = false;
  for (;;) {
    let view: View | null = null;
    try {
      const res = await client.request("GET", path, { signal: AbortSignal.timeout(30_000) });
      view = res.status === 200 ? viewOf(res.text) : null;
      if (res.status !== 200 && commitSeq === null) return null;
    } catch {
      if (commitSeq === null) return null;
    }
    if (view) {
      commitSeq ??= view.committed;
      // Several shards: each shard's own last commit, as first seen, must be held (counts over shards could be made up by another's).
      perShard ??= view.shards?.map((s) => s.committed) ?? null;
      const holds = (f: Figures, upTo: number) => f.manifest >= upTo && (f.table === null || f.table >= upTo);
      const caughtUp = perShard && view.shards?.length === perShard.length ? view.shards.every((s, k) => holds(s, perShard![k])) : holds(view, commitSeq);
      const waitedMs = deps.now() - started;
      if (caughtUp || waitedMs >= timeoutMs) {
        return { commitSeq, manifest: view.manifest, table: view.table, snapshot: view.snapshot ?? null, caughtUp, waitedMs };
      }
      if (!noted) {
        note(`waiting until the committed manifest${view.table === null ? "" : " and the table"} hold commit ${commitSeq} (all of this run's batches)`);
        noted = true;
      }
    }
    await deps.sleep(WAIT_POLL_MS);
  }
}

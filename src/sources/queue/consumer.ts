import type { IngestRequest } from "../../coordinator/protocol";
import { hearShards, ShardRouter } from "../../ingest/shard-router";
import { coordinatorStub, runnerStub, type Env } from "../../env";
import { sourceConfig } from "../../stream/config";
import { explicitQueueBatchId, queueBatchId, queueIdentity, messageHash } from "../ids";
import { readObjectBatch } from "../files/object";
import { judgeError } from "../files/plan";
import { FILES_SOURCE } from "../files/protocol";
import { classify, queueVerdict, retryDelaySeconds, type Classified, type Verdict } from "./messages";
import { resultOf } from "../../ingest/result";

type Item = { msg: Message<unknown>; c: Extract<Classified, { kind: "rows" | "object" }> };
/** One batch of a stream, and every delivered message that carries it (redeliveries in one batch share it). */
type Pending = { req: IngestRequest; msgs: Message<unknown>[]; file?: { key: string; etag: string } };

/**
 * The queue() handler: classifies each message (./messages.ts), sends poison
 * to the DLQ with its reason, and runs the rest as one ingestMany call per
 * stream. Acks what committed or replayed; retries (with a delay) what may
 * pass; a refusal that cannot goes to the DLQ (queueVerdict, ./messages.ts).
 */
export async function consumeQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const byStream = new Map<string, Item[]>();
  const settled: Promise<void>[] = [];
  for (const msg of batch.messages) {
    const c = classify(msg.body, env.INPUT_BUCKET);
    if (c.kind === "poison") settled.push(settle(env, batch.queue, msg, { action: "dead-letter", reason: c.reason }));
    else if (c.kind === "ignore") msg.ack();
    else byStream.set(c.stream, [...(byStream.get(c.stream) ?? []), { msg, c }]);
  }
  await Promise.all([...settled, ...[...byStream].map(([stream, items]) => consumeStream(env, batch.queue, stream, items))]);
}

async function consumeStream(env: Env, queue: string, stream: string, items: Item[]): Promise<void> {
  const coordinator = coordinatorStub(env, stream);
  const router = new ShardRouter(env, stream, coordinator); // batches go to the shards that judge them
  const done = new Set<Message<unknown>>();
  const verdicts: Promise<void>[] = [];
  const decide = (msg: Message<unknown>, v: Verdict) => {
    done.add(msg);
    verdicts.push(settle(env, queue, msg, v));
  };
  const pending = new Map<string, Pending>();
  const add = (msg: Message<unknown>, req: IngestRequest, file?: Pending["file"]) => {
    const k = `${req.sourceHeader}\n${req.batchId}\n${req.identity}`;
    const p = pending.get(k);
    if (p) p.msgs.push(msg);
    else pending.set(k, { req, msgs: [msg], file });
  };
  try {
    const objects = items.filter((i) => i.c.kind === "object");
    // How the "files" source's objects are read, when its declaration says (multiLine); asked once, only for objects.
    let options: Promise<{ multiLine?: boolean }> | undefined;
    const readOptions = () => (options ??= coordinator.locate().then((w) => ({ multiLine: w ? sourceConfig(w.config, FILES_SOURCE)?.multiLine : undefined })));
    if (objects.length > 0) {
      const admission = await coordinator.admit(FILES_SOURCE, { kind: "admin" });
      if (admission.kind === "admitted") hearShards(stream, admission.shards ?? 1);
      for (const { msg, c } of objects) {
        if (admission.kind !== "admitted") {
          decide(msg, queueVerdict(resultOf(admission, stream, "", FILES_SOURCE), stream, ""));
          continue;
        }
        const key = (c as Extract<Classified, { kind: "object" }>).key;
        try {
          const r = await readObjectBatch(env.INPUT, key, FILES_SOURCE, admission.limits, (s, b) => router.knownBatch(s, b), await readOptions());
          if (r.kind === "gone")
            decide(msg, { action: "ack" }); // deleted since: nothing to ingest
          else add(msg, r.batch, { key, etag: r.etag });
        } catch (e) {
          const j = judgeError(e);
          decide(msg, j.kind === "transient" ? { action: "retry" } : { action: "dead-letter", reason: `${key}: ${j.detail}` });
        }
      }
    }
    for (const { msg, c } of items) {
      if (c.kind !== "rows") continue;
      let hash: string;
      let bytes: number;
      try {
        hash = await messageHash(c.source, c.rows);
        bytes = new TextEncoder().encode(JSON.stringify(c.rows)).byteLength;
      } catch (e) {
        // Only this message: the others of its batch go on. classify() bounds the depth; a structured-clone
        // message can still share or cycle objects, which JSON cannot say. The reason names no content.
        decide(msg, { action: "dead-letter", reason: `the rows are not JSON data (${e instanceof Error ? e.name : "error"})` });
        continue;
      }
      // A message's own batch id lives in the queue's namespace (qid:…), so it cannot take another ingress's id.
      const batchId = c.batchId === null ? queueBatchId(hash) : await explicitQueueBatchId(c.batchId);
      add(msg, { sourceHeader: c.source, batchId, auth: { kind: "admin" }, rows: c.rows, identity: queueIdentity(hash), bytes });
    }
    const list = [...pending.values()];
    if (list.length === 0) return;
    const results = await router.ingestMany(list.map((p) => p.req));
    const files: { key: string; etag: string }[] = [];
    results.forEach((r, i) => {
      const { batchId, sourceHeader } = list[i].req;
      const v = queueVerdict(resultOf(r, stream, batchId, sourceHeader), stream, batchId);
      for (const msg of list[i].msgs) decide(msg, v);
      if (v.action === "ack" && list[i].file) files.push(list[i].file!);
    });
    // So that a later run over the prefix skips these without reading them; a replay if this is lost.
    if (files.length > 0)
      await runnerStub(env, stream)
        .recordDone(stream, files)
        .catch((e) => console.warn(`recording ingested files of ${stream}: ${e}`));
  } catch (e) {
    console.warn(`queue ${queue}, stream ${stream}: ${e instanceof Error ? e.message : e}; retrying`);
    for (const { msg } of items) if (!done.has(msg)) decide(msg, { action: "retry" });
  } finally {
    await Promise.all(verdicts);
  }
}

/** Acks, retries with a delay, or sends to the DLQ (`{reason, message}`) and acks; a DLQ that fails means a retry. */
async function settle(env: Env, queue: string, msg: Message<unknown>, v: Verdict): Promise<void> {
  if (v.action === "ack") return msg.ack();
  if (v.action === "retry") return msg.retry({ delaySeconds: retryDelaySeconds(msg.attempts) });
  try {
    await env.DLQ.send({ reason: v.reason, message: msg.body, id: msg.id, queue, attempts: msg.attempts });
    console.warn(`queue ${queue}: message ${msg.id} sent to the DLQ: ${v.reason}`);
    msg.ack();
  } catch (e) {
    console.error(`queue ${queue}: DLQ send failed for ${msg.id}: ${e}`);
    msg.retry({ delaySeconds: retryDelaySeconds(msg.attempts) });
  }
}

import { env, exports } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, evictDurableObject, getQueueResult, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import entry from "../../src/index";
import { createClient, type StreamBody } from "../../src/client";
import type { Partition } from "../../src/partition/partition";
import type { GroupApplyRequest, GroupEntry, PartitionRow } from "../../src/partition/protocol";
import { rowColumns } from "../../src/stream/row-columns";
import { encodeSegment, Segment, segmentsIn, type KeyEntry } from "../../src/stream/key-segment";
import { blobOf } from "../../src/partition/segment-rows";

export const TOKEN = "test-admin-token";
export const AUTH = { authorization: `Bearer ${TOKEN}` };

export async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const r = await exports.default.fetch(`http://edge-dedup.test${path}`, {
    method,
    headers: { ...AUTH, ...(body !== undefined && typeof body !== "string" ? { "content-type": "application/json" } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  // The lanes are application/x-ndjson, whose text() workerd warns about on every read: decoded as the UTF-8 it is.
  return Object.assign(r, { text: async () => new TextDecoder().decode(await r.arrayBuffer()) });
}

export async function json<T = any>(r: Response | Promise<Response>): Promise<T> {
  return (await r).json() as Promise<T>;
}

/** The typed client (src/client), through this Worker's own fetch handler. */
export const client = createClient({ baseUrl: "http://edge-dedup.test", token: TOKEN, fetch: (url, init) => exports.default.fetch(url, init) });

export async function createStream(name: string, body: Record<string, unknown>): Promise<void> {
  const { status } = await client.putStream(name, body as StreamBody);
  if (status !== 201) throw new Error(`create ${name}: ${status}, not 201 (it existed)`);
}

export async function post(stream: string, rows: unknown, headers: Record<string, string> = {}): Promise<any> {
  // A string is a body written out already (NDJSON, say): sent as it is.
  return client.ingest(stream, typeof rows === "string" ? { body: rows, headers } : { rows, headers });
}

export async function output(stream: string): Promise<any[]> {
  return (await client.output(stream)).rows;
}

/**
 * A stream with several shards (DESIGN §12): waits until every shard judges by
 * the global watermark (GET's watermarkApplied == watermark), so that the next
 * batch is judged as with one shard. Returns the stream's GET.
 */
export async function settled(stream: string, timeoutMs = 10_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const d = await json(call("GET", `/v1/streams/${stream}`));
    if (d.watermarkApplied === d.watermark) return d;
    if (Date.now() > until) throw new Error(`${stream}: watermarkApplied ${d.watermarkApplied} never reached watermark ${d.watermark}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** 2024-01-01 at hh:mm UTC, epoch ms */
export const at = (hh: number, mm: number) => Date.UTC(2024, 0, 1, hh, mm);

/** A request body that counts how many bytes the service pulled from it. */
export function countingBody(chunk: string, chunks: number) {
  const bytes = new TextEncoder().encode(chunk);
  const seen = { pulled: 0 };
  let left = chunks;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (left-- <= 0) return c.close();
      seen.pulled += bytes.length;
      c.enqueue(bytes);
    },
  });
  return { body, seen };
}

/** A queue message as the runtime delivers it. */
export const queueMessage = (id: string, body: unknown, attempts = 1) => ({ id, timestamp: new Date(), attempts, body });

/** Delivers messages to the Worker's queue() handler; what it sent to the DLQ is collected, not sent. */
export async function deliverToQueue(messages: ReturnType<typeof queueMessage>[]) {
  const sent: { reason: string; message: unknown }[] = [];
  const testEnv = { ...env, DLQ: { send: async (b: { reason: string; message: unknown }) => void sent.push(b) } } as unknown as typeof env;
  const batch = createMessageBatch("edge-dedup-events", messages);
  const ctx = createExecutionContext();
  await (entry as ExportedHandler<typeof env>).queue!(batch, testEnv, ctx);
  return { result: await getQueueResult(batch, ctx), sent };
}

/** One batch's rows for one partition. */
export type OneBatch = Omit<GroupApplyRequest, "entries" | "group" | "forget"> & Omit<GroupEntry, "resumed" | "rows"> & { rows: PartitionRow[] };

/**
 * One batch through a Partition's production method: applyGroup with one
 * entry, its earlier decisions (a retry's) replayed, judged under its own
 * ledger key; the answer with that entry's decisions.
 */
export async function applyOne(stub: DurableObjectStub<Partition>, { batch, settings, rows, ...req }: OneBatch) {
  const { decisions, ...r } = await stub.applyGroup({ ...req, entries: [{ batch, settings, rows: rowColumns(rows), resumed: true }] });
  return { ...r, decisions: decisions[0] };
}

/** A committed batch id's record as the Coordinator keeps it. */
export type CommittedIdRecord = {
  source: string;
  batch_id: string;
  body_hash: string;
  seq: number;
  /** null: kept apart, a row of `batches` (RECORD_INLINE_MAX_BYTES) */
  report: string | null;
};

/**
 * The committed ids' records a Coordinator's storage holds, in commit order:
 * since Coordinator migration 10 they ride in the commit records (the
 * `groups` rows and the outbox rows' members, src/coordinator/ledger.ts), not
 * a `batches` row each.
 */
export function committedRecords(sql: SqlStorage): CommittedIdRecord[] {
  const records = ["groups", "outbox WHERE members IS NOT NULL", "outbox_sealed WHERE members IS NOT NULL"]
    .map((t) => `SELECT first_seq, members FROM ${t}`)
    .join(" UNION ALL ");
  return sql
    .exec<CommittedIdRecord>(
      `SELECT json_extract(m.value, '$[0]') AS source, json_extract(m.value, '$[1]') AS batch_id, json_extract(m.value, '$[5]') AS body_hash,
         g.first_seq + m.key AS seq, json_extract(m.value, '$[6]') AS report
       FROM (${records}) g, json_each(g.members) m WHERE json_extract(m.value, '$[5]') IS NOT NULL ORDER BY seq`,
    )
    .toArray();
}

/**
 * Ages a stream's committed micro-batches by `ms`, as if that much time had
 * passed: flushed first (their commit records become `groups` rows), then
 * their commit times moved back. The Coordinator is evicted after: what it
 * keeps in memory (when the window's next prune step is due) was worked out
 * on the clock before.
 */
export async function ageCommits(stream: string, ms: number): Promise<void> {
  const stub = env.COORDINATOR.getByName(stream);
  await runInDurableObject(stub, async (c, state) => {
    await c.flush();
    state.storage.sql.exec("UPDATE groups SET committed_at = committed_at - ?", ms);
  });
  await evictDurableObject(stub);
}

/** A source credential (a token, an HMAC secret or a provider's signing secret), 201 or the test fails. */
export async function addCredential(stream: string, source: string, body: Record<string, unknown>): Promise<any> {
  const r = await call("POST", `/v1/streams/${stream}/sources/${source}/credentials`, body);
  if (r.status !== 201) throw new Error(`credential for ${stream}/${source}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** A provider's delivery to a source's webhook endpoint, through the Worker. */
export function deliverWebhook(stream: string, source: string, body: string | ReadableStream, headers: Record<string, string>): Promise<Response> {
  return exports.default.fetch(`http://edge-dedup.test/v1/streams/${stream}/sources/${source}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    ...(typeof body === "string" ? {} : { duplex: "half" }),
  } as RequestInit);
}

/** A destination's path. */
export const D = (stream: string, name: string) => `/v1/streams/${stream}/destinations/${name}`;

/** Polls `probe` until it answers something truthy, or fails after `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A partition's stored key entries as its storage holds them: its sealed segments' and its open segment's (src/partition/key-store.ts). */
export function storedEntries(sql: SqlStorage): { sealed: KeyEntry[]; open: KeyEntry[] } {
  const sealed = sql
    .exec<{ b: number; data: ArrayBuffer }>("SELECT b, data FROM segments")
    .toArray()
    .flatMap((r) => [...new Segment(new Uint8Array(r.data)).kept.entries(r.b)]);
  const stored = sql.exec<{ open: ArrayBuffer | null }>("SELECT open FROM meta").toArray()[0]?.open;
  const open = stored ? [...segmentsIn(new Uint8Array(stored))].flatMap((s) => [...s.kept.entries()]) : [];
  return { sealed, open };
}

/** Rewrites the open segment's kept entries (a test's way to put a partition in a state an earlier release left). */
export function rewriteOpen(sql: SqlStorage, hashed: boolean, change: (e: KeyEntry) => KeyEntry): void {
  const { open } = storedEntries(sql);
  sql.exec("UPDATE meta SET open = ?", blobOf(encodeSegment(hashed, open.map(change), [], true)));
}

/** Runs the Coordinator's alarm until the stream's rescale has ended (GET shows none); the stream's GET then. */
export async function moveUntilDone(stream: string): Promise<any> {
  const stub = env.COORDINATOR.getByName(stream);
  for (let i = 0; i < 200; i++) {
    const d = await json(call("GET", `/v1/streams/${stream}`));
    if (!d.rescale) return d;
    await runDurableObjectAlarm(stub);
  }
  throw new Error(`${stream}: the rescale never ended`);
}

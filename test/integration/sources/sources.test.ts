import { runnerV1 } from "../runner-v1";
import { env, exports } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, evictDurableObject, getQueueResult, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import entry from "../../../src/index";
import { processBatch } from "../../../src/api/ingest";
import { readObjectBatch } from "../../../src/sources/files/object";
import { DEFAULT_LIMITS } from "../../../src/stream/config";
import { call, createStream, deliverToQueue, json, output, queueMessage } from "../helpers";

/**
 * Sources beyond HTTP (DESIGN §7) inside workerd: file runs over the local
 * INPUT bucket driven alarm by alarm, and the queue consumer.
 */
const base = { key: ["id"], mode: "global", partitions: 2 };
/** The Worker's entry as the runtime sees it (queue(batch, env, ctx)). */
const worker: ExportedHandler<typeof env> = entry;
const T = Date.UTC(2026, 0, 1);
const row = (id: number, extra: Record<string, unknown> = {}) => ({ id, ts: T + id, ...extra });

/** Files with overlapping ids in every format: ids 0..(files*3) with each file sharing one id with the next. */
async function putFiles(prefix: string, n: number, from = 0): Promise<Set<number>> {
  const ids = new Set<number>();
  for (let i = from; i < from + n; i++) {
    const rows = [row(i * 2), row(i * 2 + 1), row(i * 2 + 2)];
    rows.forEach((r) => ids.add(r.id));
    const key = `${prefix}f${String(i).padStart(3, "0")}`;
    if (i % 3 === 0) await env.INPUT.put(`${key}.json`, JSON.stringify(rows));
    else if (i % 3 === 1) await env.INPUT.put(`${key}.ndjson`, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    else await env.INPUT.put(`${key}.jsonl`, rows.map((r) => JSON.stringify(r)).join("\r\n"));
  }
  return ids;
}

async function startRun(stream: string, body: Record<string, unknown>): Promise<string> {
  const r = await call("POST", `/v1/streams/${stream}/runs`, body);
  expect(r.status).toBe(202);
  return (await r.json<{ id: string }>()).id;
}

const view = (stream: string, id: string) => json(call("GET", `/v1/streams/${stream}/runs/${id}`));

/**
 * Runs the Runner's alarms until the run ends (the runtime may also fire them
 * on its own); returns its view and the alarms run. Once its files are in, a
 * run waits for the stream's publication (manifest, table): the Coordinator's
 * alarm, which would come a few seconds later, is run at once.
 */
async function drive(stream: string, id: string, between?: (alarm: number) => Promise<void>) {
  const stub = env.RUNNER.getByName(stream);
  for (let alarm = 1; alarm <= 200; alarm++) {
    const v = await view(stream, id);
    if (v.status !== "running") return v;
    if (v.publication) await runDurableObjectAlarm(env.COORDINATOR.getByName(stream));
    await runDurableObjectAlarm(stub);
    await between?.(alarm);
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`run ${id} did not finish`);
}

const ids = async (stream: string) => (await output(stream)).map((r) => r.id as number).sort((a, b) => a - b);

describe("file runs", () => {
  it("ingests every JSON/NDJSON object under the prefix once; a second run skips them all", async () => {
    await createStream("runs1", base);
    const expected = await putFiles("in/runs1/", 25);
    await env.INPUT.put("in/runs1/notes.csv", "id\n1\n"); // not ours: ignored
    // One line that is not JSON: as Spark's JSON source (PERMISSIVE), a rejected row, not a failed file.
    await env.INPUT.put("in/runs1/broken.json", "{not json");
    await env.INPUT.put("in/runs1-other/f.json", JSON.stringify([row(999)])); // another prefix
    const id = await startRun("runs1", { prefix: "in/runs1/" });
    const v = await drive("runs1", id);
    expect(v).toMatchObject({
      id,
      status: "done",
      source: "files",
      listed: true,
      files: { done: 26, left: 0, skipped: 0, failed: 0, replayed: 0 },
      input: 76,
      emitted: expected.size,
      duplicates: 75 - expected.size,
      late: 0,
      rejected: 1,
    });
    expect(v.errors).toEqual([]);
    expect(v.finishedAt).toBeGreaterThanOrEqual(v.startedAt);
    expect(await ids("runs1")).toEqual([...expected].sort((a, b) => a - b));

    // The same prefix again: nothing read, nothing new.
    const again = await drive("runs1", await startRun("runs1", { prefix: "in/runs1/" }));
    expect(again).toMatchObject({ status: "done", files: { done: 0, left: 0, skipped: 26, failed: 0 }, input: 0, emitted: 0 });
    // New files under it: only those.
    const more = await putFiles("in/runs1/", 2, 25);
    const third = await drive("runs1", await startRun("runs1", { prefix: "in/runs1/" }));
    expect(third).toMatchObject({ status: "done", files: { done: 2, skipped: 26, failed: 0 } });
    expect(await ids("runs1")).toEqual([...new Set([...expected, ...more])].sort((a, b) => a - b));
  });

  it("resumes a run interrupted between alarms and after a commit it never recorded: nothing lost or doubled", async () => {
    await createStream("runs2", base);
    const expected = await putFiles("in/runs2/", 45);
    // A crash after an object's batch committed and before the run recorded it: the run meets a replay.
    const obj = await readObjectBatch(env.INPUT, "in/runs2/f030.json", "files", DEFAULT_LIMITS, async () => false);
    if (obj.kind !== "batch") throw new Error("missing");
    expect(obj.batch.batchId).toBe(`r2:in/runs2/f030.json@${obj.etag}`);
    await processBatch(env, "runs2", obj.batch);
    const id = await startRun("runs2", { prefix: "in/runs2/" });
    let evictions = 0;
    const v = await drive("runs2", id, async () => {
      // The Runner loses its memory between alarms (as after a crash or a deploy); its storage stays.
      await evictDurableObject(env.RUNNER.getByName("runs2")).then(
        () => evictions++,
        () => undefined,
      );
    });
    expect(evictions).toBeGreaterThan(0);
    expect(v).toMatchObject({ status: "done", files: { done: 45, left: 0, failed: 0, replayed: 1 }, input: 135, emitted: expected.size });
    expect(await ids("runs2")).toEqual([...expected].sort((a, b) => a - b));
    const progress = await json(call("GET", "/v1/streams/runs2/progress?limit=1000"));
    expect(progress.progress).toHaveLength(45); // one batch per object, each committed once
  });

  it("records objects over the stream's limits and bad rows, and goes on", async () => {
    await createStream("runs3", { ...base, limits: { maxRows: 3, maxBodyBytes: 2048 } });
    await env.INPUT.put("in/runs3/a.json", JSON.stringify([row(1), row(2), row(3), row(4)]));
    await env.INPUT.put("in/runs3/b.ndjson", JSON.stringify(row(5, { pad: "x".repeat(3000) })));
    await env.INPUT.put("in/runs3/c.json", JSON.stringify(row(6)));
    await env.INPUT.put("in/runs3/d.json", "[]");
    const v = await drive("runs3", await startRun("runs3", { prefix: "in/runs3/", source: "backfill" }));
    expect(v).toMatchObject({ status: "done", source: "backfill", files: { done: 1, failed: 3 }, emitted: 1 });
    expect(v.errors.map((e: { key: string }) => e.key)).toEqual(["in/runs3/a.json", "in/runs3/b.ndjson", "in/runs3/d.json"]);
    expect(v.errors[0].detail).toMatch(/at most 3/);
    expect(v.errors[1].detail).toMatch(/at most 2048/);
    expect((await json(call("GET", "/v1/streams/runs3"))).sources.backfill).toBeDefined();
  });

  it("R2 etags are the MD5 of the bytes: a re-upload of the same bytes is skipped, other bytes are a new batch", async () => {
    await createStream("runs4", base);
    const a = await env.INPUT.put("in/runs4/a.json", JSON.stringify([row(1)]));
    const again = await env.INPUT.put("in/runs4/a.json", JSON.stringify([row(1)]));
    expect(again!.etag).toBe(a!.etag);
    const md5 = [...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(JSON.stringify([row(1)]))))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    expect(a!.etag).toBe(md5);
    expect(await drive("runs4", await startRun("runs4", { prefix: "in/runs4/" }))).toMatchObject({ files: { done: 1 }, emitted: 1 });
    await env.INPUT.put("in/runs4/a.json", JSON.stringify([row(1)]));
    expect(await drive("runs4", await startRun("runs4", { prefix: "in/runs4/" }))).toMatchObject({ files: { done: 0, skipped: 1 } });
    await env.INPUT.put("in/runs4/a.json", JSON.stringify([row(1), row(2)]));
    expect(await drive("runs4", await startRun("runs4", { prefix: "in/runs4/" }))).toMatchObject({ files: { done: 1 }, emitted: 1, duplicates: 1 });
    expect(await ids("runs4")).toEqual([1, 2]);
  });

  it("fails a run whose stream is deleted; the stream created again ingests everything again", async () => {
    await createStream("runs6", base);
    const expected = await putFiles("in/runs6/", 5);
    expect(await drive("runs6", await startRun("runs6", { prefix: "in/runs6/" }))).toMatchObject({ status: "done", files: { done: 5 } });
    await putFiles("in/runs6/", 40, 5);
    const id = await startRun("runs6", { prefix: "in/runs6/" });
    expect((await call("DELETE", "/v1/streams/runs6")).status).toBe(204);
    const v = await drive("runs6", id);
    expect(v.status).toBe("failed");
    expect(v.errors.at(-1).detail).toMatch(/was deleted/);
    await createStream("runs6", base);
    expect(await drive("runs6", await startRun("runs6", { prefix: "in/runs6/" }))).toMatchObject({ status: "done", files: { done: 45, skipped: 0 } });
    expect((await ids("runs6")).length).toBe(new Set([...expected, ...Array.from({ length: 91 }, (_, i) => i)]).size);
  });

  it("answers 404 for unknown streams and runs, 400 for a bad body, 405 otherwise", async () => {
    expect((await call("POST", "/v1/streams/nope/runs", { prefix: "x" })).status).toBe(404);
    await createStream("runs5", base);
    expect((await call("POST", "/v1/streams/runs5/runs", { prefix: 1 })).status).toBe(400);
    expect((await call("POST", "/v1/streams/runs5/runs", { prefix: "x", source: "bad name" })).status).toBe(400);
    expect((await call("GET", "/v1/streams/runs5/runs/run_nope")).status).toBe(404);
    expect((await call("DELETE", "/v1/streams/runs5/runs/run_nope")).status).toBe(405);
    expect((await call("POST", "/v1/streams/runs5/runs", { prefix: "x" }, { authorization: "Bearer wrong" })).status).toBe(403);
    expect((await call("GET", "/v1/streams/nope/publication")).status).toBe(404);
    expect((await call("GET", "/v1/streams/runs5/publication", undefined, { authorization: "Bearer wrong" })).status).toBe(403);
    expect(await json(call("GET", "/v1/streams/runs5/publication"))).toEqual({
      stream: "runs5",
      committed: 0,
      output: 0,
      manifest: 0,
      table: null,
      snapshot: null,
    });
    expect((await call("POST", "/v1/streams/runs5/publication")).status).toBe(405);
  });
});

/** gzip of a text, as a producer would write a .gz object. */
async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
const lines = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n";

describe("file runs read files as Spark's JSON source does", () => {
  it(".json is JSON Lines unless the file is one document; a bad line is a rejected row naming it; gzip is decompressed", async () => {
    await createStream("spark1", base);
    await env.INPUT.put("in/spark1/part-00000.json", lines([row(1), row(2), row(2)]));
    await env.INPUT.put("in/spark1/part-00001.json", JSON.stringify([row(3), row(4)], null, 2)); // one document, pretty-printed
    await env.INPUT.put("in/spark1/part-00002.json", `${JSON.stringify(row(5))}\n{"id": 6, "secret-bytes\n${JSON.stringify(row(7))}\n`);
    await env.INPUT.put("in/spark1/part-00003.json.gz", await gzip(lines([row(8), row(1)])));
    await env.INPUT.put("in/spark1/part-00004.ndjson.gz", await gzip(lines([row(9)])));
    await env.INPUT.put("in/spark1/part-00005.json.gz", new TextEncoder().encode("not gzip at all"));
    const v = await drive("spark1", await startRun("spark1", { prefix: "in/spark1/" }));
    expect(v).toMatchObject({ status: "done", files: { done: 5, failed: 1 }, input: 11, emitted: 8, duplicates: 2, rejected: 1 });
    expect(v.errors).toEqual([{ key: "in/spark1/part-00005.json.gz", detail: expect.stringMatching(/not valid gzip/) }]);
    expect(await ids("spark1")).toEqual([1, 2, 3, 4, 5, 7, 8, 9]);
    // The rejected lane names the line (2: its index is 1) and keeps none of its bytes.
    const rejected = await (await call("GET", "/v1/streams/spark1/rejected")).text();
    const lane = rejected
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lane).toHaveLength(1);
    expect(lane[0]).toMatchObject({ index: 1, reason: "line 2 is not valid JSON" });
    expect(rejected).not.toContain("secret-bytes");
    expect(v.publication).toMatchObject({ commitSeq: 5, manifest: 5, table: null, snapshot: null });
  });

  it("multiLine: true reads each .json whole (a JSON Lines file fails); false reads lines only; a declared source may set it", async () => {
    await createStream("spark2", { ...base, sources: { docs: { multiLine: true } } });
    await env.INPUT.put("in/spark2/a.json", lines([row(1), row(2)]));
    await env.INPUT.put("in/spark2/b.json", JSON.stringify([row(3)], null, 2));
    const whole = await drive("spark2", await startRun("spark2", { prefix: "in/spark2/", multiLine: true }));
    expect(whole).toMatchObject({ status: "done", options: { multiLine: true }, files: { done: 1, failed: 1 }, emitted: 1 });
    expect(whole.errors[0]).toMatchObject({ key: "in/spark2/a.json", detail: expect.stringMatching(/not one JSON document/) });
    // The source's declaration says the same, without the run saying it.
    await env.INPUT.put("in/spark2/c.json", lines([row(4), row(5)]));
    const declared = await drive("spark2", await startRun("spark2", { prefix: "in/spark2/", source: "docs" }));
    expect(declared).toMatchObject({ files: { failed: 2 } });
    // multiLine false: a pretty-printed document is lines, most not JSON: rejected rows, nothing emitted from it.
    await env.INPUT.put("in/spark2x/d.json", JSON.stringify(row(6), null, 2));
    const asLines = await drive("spark2", await startRun("spark2", { prefix: "in/spark2x/", multiLine: false }));
    expect(asLines).toMatchObject({ status: "done", files: { done: 1, failed: 0 }, emitted: 0 });
    expect(asLines.rejected).toBe(asLines.input);
    expect(asLines.rejected).toBeGreaterThan(2);
  });

  it("maxFilesPerTrigger puts that many files in one micro-batch (judged by one watermark); cleanSource archives or deletes after the commit", async () => {
    const timed = { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", partitions: 2 };
    const put = async (prefix: string) => {
      for (let f = 0; f < 4; f++) await env.INPUT.put(`${prefix}part-${f}.json`, lines([{ id: f, ts: T + f * 3_600_000 }]));
    };
    await createStream("spark3", timed);
    await put("in/spark3/");
    const v = await drive(
      "spark3",
      await startRun("spark3", { prefix: "in/spark3/", maxFilesPerTrigger: 4, cleanSource: "archive", sourceArchiveDir: "done/" }),
    );
    expect(v).toMatchObject({ status: "done", files: { done: 4 }, emitted: 4 });
    const grouped = (await json(call("GET", "/v1/streams/spark3/progress?limit=10"))).progress as { watermark: number }[];
    expect(new Set(grouped.map((p) => p.watermark)).size).toBe(1);
    expect((await env.INPUT.list({ prefix: "in/spark3/" })).objects).toEqual([]);
    expect((await env.INPUT.list({ prefix: "done/in/spark3/" })).objects.map((o) => o.key)).toEqual([0, 1, 2, 3].map((f) => `done/in/spark3/part-${f}.json`));
    expect(await (await env.INPUT.get("done/in/spark3/part-2.json"))!.text()).toBe(lines([{ id: 2, ts: T + 2 * 3_600_000 }]));

    // One file per micro-batch (the default): each judged by the watermark the one before it moved.
    await createStream("spark4", timed);
    await put("in/spark4/");
    const w = await drive("spark4", await startRun("spark4", { prefix: "in/spark4/", cleanSource: "delete" }));
    expect(w).toMatchObject({ status: "done", files: { done: 4 }, emitted: 4 });
    const single = (await json(call("GET", "/v1/streams/spark4/progress?limit=10"))).progress as { watermark: number }[];
    expect(new Set(single.map((p) => p.watermark)).size).toBe(4);
    expect((await env.INPUT.list({ prefix: "in/spark4/" })).objects).toEqual([]);

    // The options are checked: an archive needs a directory that does not overlap the prefix.
    for (const bad of [
      { prefix: "in/", cleanSource: "archive" },
      { prefix: "in/", cleanSource: "archive", sourceArchiveDir: "in/done/" },
      { prefix: "in/x/", cleanSource: "archive", sourceArchiveDir: "in/" },
      { prefix: "in/", sourceArchiveDir: "done/" },
      { prefix: "in/", maxFilesPerTrigger: 0 },
      { prefix: "in/", multiLine: "yes" },
    ])
      expect((await call("POST", "/v1/streams/spark4/runs", bad)).status, JSON.stringify(bad)).toBe(400);
  });

  it("a run with a table is done only once the table's current snapshot holds what it ingested", async () => {
    await createStream("spark5", { ...base, schema: { id: "long", ts: "long" }, table: { format: "iceberg" } });
    await env.INPUT.put("in/spark5/a.json", lines([row(1), row(2), row(1)]));
    await env.INPUT.put("in/spark5/b.json", lines([row(3), row(2)]));
    const id = await startRun("spark5", { prefix: "in/spark5/" });
    // Without the Coordinator's alarm (no publication), the run waits rather than reporting done.
    const stub = env.RUNNER.getByName("spark5");
    for (let i = 0; i < 5; i++) await runDurableObjectAlarm(stub);
    const waiting = await view("spark5", id);
    if (waiting.status === "running") expect(waiting.publication).toMatchObject({ commitSeq: 2, snapshot: null });
    const v = await drive("spark5", id);
    expect(v).toMatchObject({
      status: "done",
      emitted: 3,
      publication: { commitSeq: 2, manifest: 2, table: 2, snapshot: { "total-records": 3, "commit-seq": 2 } },
    });
    const table = await json(call("GET", "/v1/streams/spark5/table"));
    expect(table.snapshot["snapshot-id"]).toBe(v.publication.snapshot["snapshot-id"]);
    expect(table.snapshot.summary["total-records"]).toBe("3");
  });
});

describe("a Runner from before run options and publication", () => {
  it("gets the new columns on its next start and runs as before", async () => {
    await createStream("old1", base);
    const stub = env.RUNNER.getByName("old1");
    // The first version's tables, with a finished run in them.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(runnerV1("old1", "in/old1/"));
    });
    await evictDurableObject(stub);
    expect(await view("old1", "run_old")).toMatchObject({ status: "done", options: {}, publication: null });
    await env.INPUT.put("in/old1/a.json", lines([row(1), row(1)]));
    expect(await drive("old1", await startRun("old1", { prefix: "in/old1/", maxFilesPerTrigger: 2 }))).toMatchObject({
      status: "done",
      options: { maxFilesPerTrigger: 2 },
      emitted: 1,
      duplicates: 1,
      publication: { commitSeq: 1 },
    });
  });
});

describe("queue consumer", () => {
  const msg = queueMessage;
  const deliver = deliverToQueue;

  it("ingests rows messages and R2 notifications once, however they are redelivered or regrouped; poison goes to the DLQ", async () => {
    await createStream("q1", base);
    const m1 = { stream: "q1", source: "app", rows: [row(1), row(2)] };
    const m2 = { stream: "q1", source: "app", batchId: "order-7", rows: [row(2), row(3)] };
    const put = await env.INPUT.put("streams-in/q1/2026/a.ndjson", [row(3), row(4)].map((r) => JSON.stringify(r)).join("\n"));
    const note = {
      account: "a",
      action: "PutObject",
      bucket: "edge-dedup-input",
      object: { key: "streams-in/q1/2026/a.ndjson", size: 10, eTag: put!.etag },
      eventTime: "2026-01-01T00:00:00Z",
    };
    const first = await deliver([
      msg("a", m1),
      msg("a-again", m1, 2),
      msg("b", m2),
      msg("n", note),
      msg("p1", { stream: "nope", rows: [row(9)] }),
      msg("p2", { rows: "x" }),
      msg("p3", "not json"),
      msg("del", { ...note, action: "DeleteObject" }),
    ]);
    expect(first.result.retryMessages).toEqual([]);
    expect(first.result.explicitAcks.sort()).toEqual(["a", "a-again", "b", "del", "n", "p1", "p2", "p3"]);
    expect(first.sent.map((s) => s.message)).toEqual([{ rows: "x" }, "not json", { stream: "nope", rows: [row(9)] }]);
    expect(first.sent[2].reason).toBe('stream "nope" does not exist');
    expect(await ids("q1")).toEqual([1, 2, 3, 4]);

    // Regrouped: the same contents in new messages of another delivery (and the notification again): replays.
    const second = await deliver([msg("c", { ...m1 }), msg("d", { rows: m2.rows, batchId: "order-7", source: "app", stream: "q1" }), msg("n2", note)]);
    expect(second.result.explicitAcks.sort()).toEqual(["c", "d", "n2"]);
    expect(second.sent).toEqual([]);
    expect(await ids("q1")).toEqual([1, 2, 3, 4]);
    const progress = await json(call("GET", "/v1/streams/q1/progress?limit=100"));
    expect(progress.progress).toHaveLength(3);

    // A run over the notified prefix skips the object the queue ingested.
    const run = await drive("q1", await startRun("q1", { prefix: "streams-in/q1/" }));
    expect(run).toMatchObject({ files: { done: 0, skipped: 1 } });

    // The batch id reused with other rows: a 422 refusal, to the DLQ.
    const third = await deliver([msg("e", { ...m2, rows: [row(5)] })]);
    expect(third.sent).toHaveLength(1);
    expect(third.sent[0].reason).toMatch(/422/);
    expect(third.result.explicitAcks).toEqual(["e"]);
  });

  it("retries with a delay when the stream's micro-batch fails", async () => {
    await createStream("q2", base);
    const broken = {
      ...env,
      COORDINATOR: {
        getByName: () => ({
          ingestMany: async () => {
            throw new Error("overloaded");
          },
        }),
      },
    } as unknown as typeof env;
    const batch = createMessageBatch("edge-dedup-events", [msg("r", { stream: "q2", rows: [row(1)] }, 3)]);
    const delays: (number | undefined)[] = [];
    const m = batch.messages[0];
    const retry = m.retry.bind(m);
    Object.defineProperty(m, "retry", { value: (o?: QueueRetryOptions) => (delays.push(o?.delaySeconds), retry(o)) });
    const ctx = createExecutionContext();
    await worker.queue!(batch, broken, ctx);
    expect(delays).toEqual([8]); // 2^attempts
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual([]);
    // (the test harness records retries without their delay: retryDelaySeconds is unit-tested)
    expect(result.retryMessages).toEqual([{ msgId: "r" }]);
    expect(await ids("q2")).toEqual([]);
  });
});

it("keeps the HTTP entry (fetch) as it was", async () => {
  const r = await exports.default.fetch("http://edge-dedup.test/v1/streams/x", { headers: { authorization: "Bearer wrong" } });
  expect(r.status).toBe(403);
});

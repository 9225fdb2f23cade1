/**
 * Issue 14 through the real Worker, for the ingresses beyond HTTP: one depth
 * limit (64) for every JSON the service parses, checked before hashing or
 * recursion, so a deep message or line is one refusal (a poison verdict, a
 * file error) and never a retried batch; errors that never quote row bytes;
 * and batch ids in the queue's own namespace.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, createStream, deliverToQueue, json, output, queueMessage } from "../helpers";

const base = { key: ["id"], mode: "global", partitions: 2 };
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const SECRET = "sk_live_abc";

describe("queue messages", () => {
  const msg = queueMessage;
  const deliver = deliverToQueue;

  it("a message nested 5,000 deep as text, or 1,500 as an object, is poison on its own; the healthy ones batched with it commit", async () => {
    await createStream("qdeep", base);
    let deepObject: unknown = 1;
    // As deep as the test harness can clone (its structured clone overflows near 5,000); the text form goes to 5,000.
    for (let i = 0; i < 1_500; i++) deepObject = [deepObject];
    const healthy = { stream: "qdeep", rows: [{ id: 1 }, { id: 2 }] };
    const r = await deliver([
      msg("ok", healthy),
      msg("deep-object", { stream: "qdeep", rows: [{ id: 3, x: deepObject }] }),
      msg("deep-text", JSON.stringify({ stream: "qdeep", rows: [{ id: 4 }] }).replace("}]", `,"x":${nested(5_000)}}]`)),
      msg("just-over", { stream: "qdeep", rows: [{ id: 5, x: JSON.parse(nested(62)) }] }),
      msg("at-limit", { stream: "qdeep", rows: [{ id: 6, x: JSON.parse(nested(61)) }] }),
    ]);
    expect(r.result.retryMessages).toEqual([]);
    expect(r.result.explicitAcks.sort()).toEqual(["at-limit", "deep-object", "deep-text", "just-over", "ok"]);
    expect(r.sent.map((s) => s.reason)).toEqual([
      "the body nests arrays and objects more than 64 levels deep; at most 64 are accepted",
      "the body nests arrays and objects more than 64 levels deep; at most 64 are accepted",
      "the body nests arrays and objects more than 64 levels deep; at most 64 are accepted",
    ]);
    expect((await output("qdeep")).map((row) => row.id).sort()).toEqual([1, 2, 6]);
  });

  it("a message whose rows cycle (structured clone allows it) is poison on its own", async () => {
    await createStream("qcycle", base);
    const row: Record<string, unknown> = { id: 1 };
    row.self = row;
    const r = await deliver([msg("cycle", { stream: "qcycle", rows: [row] }), msg("ok", { stream: "qcycle", rows: [{ id: 2 }] })]);
    expect(r.result.retryMessages).toEqual([]);
    // Refused by the hashing, or by the depth check where the harness hands the cycle over as ever-new objects.
    expect(r.sent.map((s) => s.reason)).toEqual([
      expect.stringMatching(/^the (rows are not JSON data|body nests arrays and objects more than 64 levels deep)/),
    ]);
    expect((await output("qcycle")).map((x) => x.id)).toEqual([2]);
  });

  it("a message that is not JSON is poison with a reason that does not quote it", async () => {
    const r = await deliver([msg("bad", `{"stream":"q","rows":[{"token":${SECRET}}]}`), msg("cut", `{"stream":"q","rows":[{"token":"${SECRET}`)]);
    expect(r.sent).toHaveLength(2);
    for (const s of r.sent) {
      expect(s.reason).toMatch(/^the body is not valid JSON \(/);
      expect(s.reason).not.toContain("sk_live");
    }
  });

  it("a message's own batch id is in the queue's namespace: it cannot take a provider's or a file's id", async () => {
    await createStream("qns", { key: ["id"], eventTime: "time", watermarkDelay: "1 hour", partitions: 2 });
    const time = Date.now() - 60_000;
    const r = await deliver([msg("pre", { stream: "qns", source: "main", batchId: "stripe:evt_9", rows: [{ id: "queue-row", time }] })]);
    expect(r.sent).toEqual([]);
    const progress = (await json(call("GET", "/v1/streams/qns/progress"))).progress;
    expect(progress.map((p: any) => p.batchId)).toEqual(["qid:stripe:evt_9"]);
    // The same message again is a replay of that batch, as before.
    await deliver([msg("pre-again", { stream: "qns", source: "main", batchId: "stripe:evt_9", rows: [{ id: "queue-row", time }] })]);
    expect((await json(call("GET", "/v1/streams/qns/progress"))).progress).toHaveLength(1);
  });
});

describe("file runs", () => {
  async function run(stream: string, prefix: string) {
    const r = await call("POST", `/v1/streams/${stream}/runs`, { prefix });
    expect(r.status).toBe(202);
    const { id } = await r.json<{ id: string }>();
    for (let alarm = 0; alarm < 100; alarm++) {
      const v = await json(call("GET", `/v1/streams/${stream}/runs/${id}`));
      if (v.status !== "running") return v;
      // A run is done once the manifest holds what it committed (DESIGN §7): the Coordinator's alarm publishes it.
      if (v.publication) await runDurableObjectAlarm(env.COORDINATOR.getByName(stream));
      await runDurableObjectAlarm(env.RUNNER.getByName(stream));
    }
    throw new Error("the run did not finish");
  }

  it("a line nested too deep, or not JSON, is a rejected row that names its line and not its bytes; the rest of each file is ingested", async () => {
    await createStream("fdeep", base);
    await env.INPUT.put("in/fdeep/a.ndjson", `{"id":1}\n{"id":2,"x":${nested(20_000)}}\n`);
    await env.INPUT.put("in/fdeep/b.json", `[{"id":3,"token":${SECRET}}]`);
    await env.INPUT.put("in/fdeep/c.jsonl", `{"id":4}\n{"id":5,"x":${nested(62)}}\n`);
    const v = await run("fdeep", "in/fdeep/");
    // As Spark's PERMISSIVE mode: a bad line does not fail its file (issue 15); the depth check still holds before any parse.
    expect(v).toMatchObject({ status: "done", files: { done: 3, failed: 0 } });
    expect(JSON.stringify(v)).not.toContain("sk_live");
    expect((await output("fdeep")).map((row) => row.id).sort()).toEqual([1, 4, 5]);
    const rejected = (await (await call("GET", "/v1/streams/fdeep/rejected")).text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rejected.map((r: any) => r.reason).sort()).toEqual([expect.stringMatching(/line 1\b/), expect.stringMatching(/line 2\b/)]);
    expect(JSON.stringify(rejected)).not.toContain("sk_live");
  });
});

import { describe, expect, test } from "vitest";
import { chunkRows } from "../../../src/cli/chunk.ts";
import { DEFAULT_RETRY, sendBatch, type SendDeps } from "../../../src/cli/sender.ts";

const target = { url: "http://127.0.0.1:1/", stream: "s 1", source: "files", token: "tok" };
const [batch] = chunkRows("a.ndjson", ['{"id":1}', '{"id":2}'], { maxRows: 10, maxBytes: 1000 });
const ok = (extra: Record<string, unknown> = {}) =>
  new Response(JSON.stringify({ batchId: batch.id, replayed: false, input: 2, emitted: 1, duplicates: 1, late: 0, rejected: [], ...extra }), { status: 200 });
const problem = (status: number, slug: string, detail: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: `https://edge-dedup.dev/problems/${slug}`, title: "t", status, detail }), {
    status,
    headers: { "content-type": "application/problem+json", ...headers },
  });

function fake(answers: Array<Response | Error>) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const sleeps: number[] = [];
  const deps: SendDeps = {
    fetch: (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      const a = answers[Math.min(calls.length - 1, answers.length - 1)];
      if (a instanceof Error) throw a;
      return a.clone();
    }) as typeof fetch,
    sleep: async (ms) => void sleeps.push(ms),
    random: () => 0.5,
    now: () => Date.UTC(2026, 0, 1),
  };
  return { deps, calls, sleeps };
}

describe("sendBatch", () => {
  test("posts the batch's bytes as NDJSON with its id, source and token", async () => {
    const f = fake([ok()]);
    const r = await sendBatch(batch, target, DEFAULT_RETRY, f.deps);
    expect(r).toEqual({ ok: true, attempts: 1, outcome: { replayed: false, input: 2, emitted: 1, duplicates: 1, late: 0, rejected: 0 } });
    expect(f.calls[0].url).toBe("http://127.0.0.1:1/v1/streams/s%201/events");
    expect(f.calls[0].init.method).toBe("POST");
    expect(f.calls[0].init.body).toBe(batch.body);
    expect(f.calls[0].init.headers).toEqual({
      "content-type": "application/x-ndjson",
      "idempotency-key": batch.id,
      authorization: "Bearer tok",
      "x-source": "files",
    });
  });

  test("retries network errors, 5xx, 429 and 409 batch-in-flight with the same bytes and id, honouring Retry-After", async () => {
    const f = fake([
      new TypeError("fetch failed"),
      problem(503, "internal", "x"),
      problem(429, "slow-down", "x", { "retry-after": "7" }),
      problem(409, "batch-in-flight", "busy", { "retry-after": "2" }),
      ok({ replayed: true }),
    ]);
    const r = await sendBatch(batch, target, DEFAULT_RETRY, f.deps);
    expect(r.ok && r.outcome.replayed).toBe(true);
    expect(r.attempts).toBe(5);
    expect(f.sleeps).toEqual([188, 375, 7000, 2000]);
    expect(new Set(f.calls.map((c) => (c.init.headers as Record<string, string>)["idempotency-key"]))).toEqual(new Set([batch.id]));
    for (const c of f.calls) expect(c.init.body).toBe(batch.body);
  });

  test("gives up after maxAttempts and says what it saw last", async () => {
    const f = fake([problem(502, "internal", "bad gateway")]);
    const r = await sendBatch(batch, target, { ...DEFAULT_RETRY, maxAttempts: 3 }, f.deps);
    expect(r).toEqual({ ok: false, attempts: 3, fatal: false, error: "gave up after 3 attempts; last: HTTP 502 internal: bad gateway" });
    expect(f.calls).toHaveLength(3);
    expect(f.sleeps).toHaveLength(2);
  });

  test("other 4xx are not retried and report the problem's detail; 401/403/404 are fatal", async () => {
    const f = fake([problem(422, "idempotency-key-reused", "batch id was already used with a different body")]);
    expect(await sendBatch(batch, target, DEFAULT_RETRY, f.deps)).toEqual({
      ok: false,
      attempts: 1,
      fatal: false,
      status: 422,
      error: "HTTP 422 idempotency-key-reused: batch id was already used with a different body",
    });
    const g = fake([problem(404, "not-found", 'stream "s" does not exist')]);
    const r = await sendBatch(batch, target, DEFAULT_RETRY, g.deps);
    expect(r.ok === false && r.fatal).toBe(true);
    expect(g.calls).toHaveLength(1);
    const h = fake([problem(409, "bound-field-changed", "no")]);
    expect((await sendBatch(batch, target, DEFAULT_RETRY, h.deps)).attempts).toBe(1);
  });

  test("rejectedCount wins over the capped list", async () => {
    const f = fake([ok({ rejected: [{ index: 0, error: "x" }], rejectedCount: 150 })]);
    const r = await sendBatch(batch, target, DEFAULT_RETRY, f.deps);
    expect(r.ok && r.outcome.rejected).toBe(150);
  });
});

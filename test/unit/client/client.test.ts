/**
 * The typed client (src/client) against a fake fetch: what it sends, and how
 * it maps answers to values and errors. That it speaks the real service's
 * language is proven by the e2e, workers and CLI tests that go through it.
 */
import { describe, expect, test } from "vitest";
import { createClient, ProblemError, ResponseError } from "edge-dedup/client";

function fake(answer: () => Response) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const client = createClient({
    baseUrl: "http://svc.test/",
    token: "admin",
    fetch: async (url, init) => {
      calls.push({ url, init });
      return answer();
    },
  });
  return { client, calls };
}

const problem = (status: number, slug: string, detail: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: `https://edge-dedup.dev/problems/${slug}`, title: "t", status, detail, errors: [{ path: "key" }] }), {
    status,
    headers: { "content-type": "application/problem+json", ...headers },
  });

describe("createClient", () => {
  test("ingest sends rows as JSON with the batch id, source, token and extra headers, and answers the outcome", async () => {
    const outcome = {
      batchId: "b1",
      source: "s",
      replayed: false,
      input: 1,
      emitted: 1,
      duplicates: 0,
      late: 0,
      rejected: [],
      watermark: 0,
      watermarkAfter: 0,
    };
    const { client, calls } = fake(() => Response.json(outcome));
    expect(await client.ingest("my stream", { rows: [{ id: 1 }], batchId: "b1", source: "s", headers: { "x-signature": "t=1,v2=ab" } })).toEqual(outcome);
    expect(calls[0].url).toBe("http://svc.test/v1/streams/my%20stream/events");
    expect(calls[0].init.method).toBe("POST");
    expect(calls[0].init.body).toBe('[{"id":1}]');
    expect(calls[0].init.headers).toEqual({
      "content-type": "application/json",
      "idempotency-key": "b1",
      "x-source": "s",
      "x-signature": "t=1,v2=ab",
      authorization: "Bearer admin",
    });
  });

  test("a token override replaces the client's; null sends none; a written Authorization header wins", async () => {
    const { client, calls } = fake(() => new Response("{}"));
    await client.postEvents("s", { body: "{}", token: "src-token" });
    await client.postEvents("s", { body: "{}", token: null });
    await client.request("GET", "/v1/streams", { headers: { Authorization: "Bearer other" } });
    expect(calls.map((c) => c.init.headers)).toEqual([
      { "content-type": "application/json", authorization: "Bearer src-token" },
      { "content-type": "application/json" },
      { Authorization: "Bearer other" },
    ]);
  });

  test("a base URL and a token given as functions are read on every call (a server that restarts elsewhere)", async () => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    let where = { url: "http://a.test", token: "t1" };
    const client = createClient({
      baseUrl: () => where.url,
      token: () => where.token,
      fetch: async (url, init) => (calls.push({ url, init }), Response.json({ status: "ok" })),
    });
    await client.listStreams();
    where = { url: "http://b.test", token: "t2" };
    await client.listStreams({ after: "x" });
    expect(calls.map((c) => [c.url, (c.init.headers as Record<string, string>).authorization])).toEqual([
      ["http://a.test/v1/streams", "Bearer t1"],
      ["http://b.test/v1/streams?after=x", "Bearer t2"],
    ]);
  });

  test("an error status is a ProblemError with the status, the problem and the headers", async () => {
    const { client } = fake(() => problem(409, "batch-in-flight", "busy", { "retry-after": "2" }));
    const e = await client.ingest("s", { rows: [] }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ProblemError);
    const p = e as ProblemError;
    expect([p.status, p.slug, p.problem?.detail, p.problem?.errors, p.headers.get("retry-after")]).toEqual([
      409,
      "batch-in-flight",
      "busy",
      [{ path: "key" }],
      "2",
    ]);
    expect(p.message).toBe("HTTP 409 batch-in-flight: busy");
  });

  test("an error that is not problem+json keeps its text; a success that is not JSON is a ResponseError", async () => {
    const html = fake(() => new Response("<html>\n Bad   gateway</html>", { status: 502 }));
    const e = (await html.client.getStream("s").catch((x: unknown) => x)) as ProblemError;
    expect([e.problem, e.slug, e.message]).toEqual([null, null, "HTTP 502: <html> Bad gateway</html>"]);
    const garbled = fake(() => new Response("not json", { status: 200 }));
    const g = await garbled.client.getStream("s").catch((x: unknown) => x);
    expect(g).toBeInstanceOf(ResponseError);
    expect(g).not.toBeInstanceOf(ProblemError);
    expect((g as ResponseError).text).toBe("not json");
  });

  test("a lane answers its text, its rows and X-Commit-Seq; queries carry only what is given", async () => {
    const { client, calls } = fake(() => new Response('{"id":1}\n{"id":2}\n', { headers: { "x-commit-seq": "7" } }));
    expect(await client.late("s", { after: 3 })).toEqual({ text: '{"id":1}\n{"id":2}\n', rows: [{ id: 1 }, { id: 2 }], commitSeq: 7 });
    await client.state("s", { partition: 0 }).catch(() => undefined);
    expect(calls.map((c) => c.url)).toEqual(["http://svc.test/v1/streams/s/late?after=3", "http://svc.test/v1/streams/s/state?partition=0"]);
  });

  test("putStream says 201 from 200, and expects nothing else", async () => {
    let status = 201;
    const { client } = fake(() => Response.json({ stream: "s", status: "created", config: {} }, { status }));
    expect((await client.putStream("s", { key: ["id"], mode: "global" })).status).toBe(201);
    status = 200;
    expect((await client.putStream("s", { key: ["id"], mode: "global" })).status).toBe(200);
    status = 202;
    await expect(client.putStream("s", { key: ["id"], mode: "global" })).rejects.toBeInstanceOf(ProblemError);
  });
});

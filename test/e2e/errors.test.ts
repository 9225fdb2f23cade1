/**
 * Bad input through HTTP (DESIGN §4): every error is application/problem+json,
 * and a request that fails changes nothing: no state, no output, no watermark,
 * no ledger entry for its batch id.
 */
import { describe, expect, test } from "vitest";
import { at, type RawResponse, useServer } from "./server";

const { server, api } = useServer();

function expectProblem(res: RawResponse, status: number, typeSuffix?: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  const p = JSON.parse(res.text);
  expect(p.status).toBe(status);
  expect(typeof p.type).toBe("string");
  expect(typeof p.title).toBe("string");
  expect(typeof p.detail).toBe("string");
  expect(p.detail.length).toBeGreaterThan(0);
  if (typeSuffix) expect(p.type).toMatch(new RegExp(`${typeSuffix}$`));
  return p as { type: string; title: string; status: number; detail: string; errors?: Record<string, unknown>[] };
}

describe("bad input keeps state unchanged", () => {
  test("malformed bodies, unknown streams and bad credentials are problems that change nothing", async () => {
    const s = "errors";
    const config = { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2, limits: { maxRows: 50 } };
    await api.putStream(s, config);
    expect(
      await api.ingest(
        s,
        [1, 2, 3].map((i) => ({ id: `g${i}`, ts: at(10) })),
      ),
    ).toMatchObject({ emitted: 3, watermarkAfter: at(9, 50) });
    const before = await api.snapshot(s);

    // Rows far ahead (12:00): had any of them been applied, the watermark would have moved.
    const good = (id: string) => JSON.stringify({ id, ts: at(12) });

    // Malformed JSON.
    const malformed = await api.post(s, null, { raw: `[${good("n1")}, {"id": "n2", "ts": `, batchId: "bad-json" });
    expect(expectProblem(malformed, 400).detail).toMatch(/JSON/);

    // NDJSON with a bad third line: 400 naming the line; lines 1 and 2 are not applied either.
    const ndjson = [good("n1"), good("n2"), `{"id": "n3", oops}`, good("n4")].join("\n");
    const badLine = await api.post(s, null, { raw: ndjson, contentType: "application/x-ndjson", batchId: "bad-ndjson" });
    const p = expectProblem(badLine, 400);
    expect(p.detail).toMatch(/line 3\b/);
    expect(p.errors).toEqual([expect.objectContaining({ line: 3 })]);

    // Other bodies that cannot be a batch.
    expectProblem(await api.post(s, null, { raw: "42" }), 400);
    expectProblem(await api.post(s, null, { raw: "" }), 400);
    expectProblem(await api.post(s, null, { raw: "   \n", contentType: "application/x-ndjson" }), 400);
    expectProblem(await api.post(s, []), 400);
    expectProblem(await api.post(s, [{ id: "n5", ts: at(12) }], { source: "not a source!" }), 400);
    expectProblem(await api.post(s, [{ id: "n5", ts: at(12) }], { batchId: "é" }), 400);

    // Over the stream's row limit: 413.
    expectProblem(
      await api.post(
        s,
        Array.from({ length: 51 }, (_, i) => ({ id: `big${i}`, ts: at(12) })),
        { batchId: "too-big" },
      ),
      413,
    );
    // A known path with the wrong method: 405 saying what is allowed.
    const wrongMethod = await api.request("PATCH", `/v1/streams/${s}/events`);
    expectProblem(wrongMethod, 405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");

    // Unknown stream: 404 for ingest and for every read.
    expectProblem(await api.post("no-such-stream", [{ id: "n6", ts: at(12) }]), 404, "not-found");
    for (const path of ["", "/output", "/progress", "/state?partition=0"]) {
      expectProblem(await api.request("GET", `/v1/streams/no-such-stream${path}`), 404, "not-found");
    }
    expectProblem(await api.request("GET", "/v1/streams/-bad-name"), 400);

    // No token: 401 with a challenge; a wrong token: 403. For ingest and admin calls alike.
    const noToken = await api.post(s, [{ id: "n7", ts: at(12) }], { token: null, batchId: "unauthorized" });
    expectProblem(noToken, 401, "unauthorized");
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expectProblem(await api.post(s, [{ id: "n7", ts: at(12) }], { token: "wrong-token", batchId: "forbidden" }), 403, "forbidden");
    expectProblem(await api.request("GET", `/v1/streams/${s}/output`, { token: null }), 401);
    expectProblem(await api.request("GET", `/v1/streams/${s}`, { token: "wrong-token" }), 403);
    expectProblem(await api.request("DELETE", `/v1/streams/${s}`, { token: "wrong-token" }), 403);
    expectProblem(await api.request("PUT", `/v1/streams/${s}`, { token: null, body: JSON.stringify({ ...config, watermarkDelay: "1 hour" }) }), 401);

    // Config errors: invalid → 400 with field errors; a bound field changed → 409; neither applies.
    const invalid = await api.request("PUT", `/v1/streams/${s}`, { body: JSON.stringify({ ...config, watermarkDelay: "soon" }) });
    expect(expectProblem(invalid, 400).errors).toEqual([expect.objectContaining({ path: "watermarkDelay" })]);
    const bound = await api.request("PUT", `/v1/streams/${s}`, { body: JSON.stringify({ ...config, key: ["other"], watermarkDelay: "1 hour" }) });
    expect(expectProblem(bound, 409).errors).toEqual([expect.objectContaining({ path: "key" })]);
    // A config over 64 KiB (the review's 5 MB one), a source called __proto__: refused, nothing applied.
    const huge = JSON.stringify({ ...config, watermarkDelay: "1 hour", table: { format: "iceberg", location: "x".repeat(5 * 1024 * 1024) } });
    expectProblem(await api.request("PUT", `/v1/streams/${s}`, { body: huge }), 413, "body-too-large");
    const dunder = await api.request("PUT", `/v1/streams/${s}`, {
      body: `{"key": ["id"], "eventTime": "ts", "watermarkDelay": "1 hour", "sources": {"__proto__": {}}}`,
    });
    expect(expectProblem(dunder, 400).errors).toEqual([expect.objectContaining({ path: "sources.__proto__" })]);
    // The state reader: a row with no state key is a 400, not a 500.
    for (const row of ['{"id": 1e999}', `${"[".repeat(5000)}${"]".repeat(5000)}`, '{"ts": 1}', "[]"]) {
      expectProblem(await api.request("GET", `/v1/streams/${s}/state?row=${encodeURIComponent(row)}`), 400, "invalid-request");
    }

    expect(await api.snapshot(s)).toEqual(before);

    // Nothing was recorded for those batch ids or keys: they run fresh now, and every row is new.
    const n = await api.ingest(s, null, { raw: [good("n1"), good("n2"), good("n4")].join("\n"), contentType: "application/x-ndjson", batchId: "bad-ndjson" });
    expect(n).toMatchObject({ replayed: false, input: 3, emitted: 3, duplicates: 0, late: 0, watermark: at(9, 50) });
    const m = await api.ingest(s, [{ id: "n7", ts: at(12) }], { batchId: "unauthorized" });
    expect(m).toMatchObject({ replayed: false, emitted: 1, watermark: at(11, 50) });
    // A single JSON object is a batch of one.
    const one = await api.ingest(s, { id: "big0", ts: at(12) }, { batchId: "too-big" });
    expect(one).toMatchObject({ replayed: false, input: 1, emitted: 1 });
    expect((await api.output<{ id: string }>(s)).map((r) => r.id)).toEqual(["g1", "g2", "g3", "n1", "n2", "n4", "n7", "big0"]);
  });
});

/**
 * Batch-id idempotency over HTTP (DESIGN §1, §2.8 "exactly-once batches", §4):
 * replaying committed batches changes nothing, a reused id with another body is
 * a 422, and concurrent requests with one id produce its output exactly once.
 */
import { describe, expect, test } from "vitest";
import { at, type Outcome, pollUntil, sleep, useServer } from "./server";

const { server, api } = useServer();

interface Batch {
  id: string;
  source: string;
  rows?: unknown[];
  raw?: string;
  contentType?: string;
}

async function send(stream: string, b: Batch) {
  return api.post(stream, b.rows, { batchId: b.id, source: b.source, raw: b.raw, contentType: b.contentType });
}

describe("replaying committed batches", () => {
  test("every committed batch replays its outcome with replayed: true and changes nothing", async () => {
    const s = "replay";
    await api.putStream(s, {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "10 minutes",
      partitions: 4,
      schema: { id: "int", amount: "double", ts: "timestamp" },
    });
    const row = (id: number | string, ts: number | string, amount = 1.5) => ({ id, ts, amount });
    const batches: Batch[] = [
      { id: "r1", source: "a", rows: [1, 2, 3, 4, 5].map((i) => row(i, at(10))).concat(row(1, at(10, 1))) },
      {
        id: "r2",
        source: "b",
        rows: [
          row(6, at(10, 30)),
          row(7, at(10, 30)),
          { amount: 2, ts: at(10, 30) },
          row(8, "2099-01-01T00:00:00Z"),
          row("9", at(10, 30)),
          row(10, at(10, 30), "x" as unknown as number),
        ],
      },
      { id: "r3", source: "a", rows: [row(11, at(10, 15)), row(12, at(10, 15)), row(2, at(10, 20))] },
      {
        id: "r4",
        source: "b",
        contentType: "application/x-ndjson",
        raw: `${JSON.stringify(row(13, "2024-01-01T11:00:00Z"))}\n\n${JSON.stringify(row(14, "2024-01-01 11:00:00"))}\n`,
      },
      { id: "r5", source: "a", rows: [row(15, at(10, 10)), row(16, at(10, 11)), row(6, at(10, 31))] },
      { id: "r6", source: "a", rows: [row(17, at(12))] },
    ];
    // Sources a and b join as they send; the global watermark is the min of (max T - 10 min).
    // Each duplicate here carries another event time than its kept copy: not a conflict (the event time is never content, as in Spark).
    const expected = [
      { input: 6, emitted: 5, duplicates: 1, conflicts: 0, late: 0, rejected: 0, watermark: 0, watermarkAfter: at(9, 51) },
      { input: 6, emitted: 3, duplicates: 0, conflicts: 0, late: 0, rejected: 3, watermark: at(9, 51), watermarkAfter: at(9, 51) },
      { input: 3, emitted: 2, duplicates: 1, conflicts: 0, late: 0, rejected: 0, watermark: at(9, 51), watermarkAfter: at(10, 10) },
      { input: 2, emitted: 2, duplicates: 0, conflicts: 0, late: 0, rejected: 0, watermark: at(10, 10), watermarkAfter: at(10, 10) },
      { input: 3, emitted: 1, duplicates: 1, conflicts: 0, late: 1, rejected: 0, watermark: at(10, 10), watermarkAfter: at(10, 21) },
      { input: 1, emitted: 1, duplicates: 0, conflicts: 0, late: 0, rejected: 0, watermark: at(10, 21), watermarkAfter: at(10, 50) },
    ];

    const first: Outcome[] = [];
    for (const [i, b] of batches.entries()) {
      const res = await send(s, b);
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get("idempotency-key")).toBe(b.id);
      const o = JSON.parse(res.text) as Outcome;
      expect({ ...o, rejected: o.rejected.length }).toEqual({ batchId: b.id, source: b.source, replayed: false, ...expected[i] });
      first.push(o);
    }
    expect(first[1].rejected.map((r) => r.index)).toEqual([2, 3, 5]);
    expect(first[1].rejected[0].error).toMatch(/^id: /);
    expect(first[1].rejected[1].error).toMatch(/^ts: /);
    expect(first[1].rejected[2].error).toMatch(/^amount: /);

    // Let the last watermark (10:50) evict every key of 10:40 and before, so a replay that
    // re-ran the dedup step instead of returning the recorded outcome would emit them again.
    const evicted = await pollUntil(
      () => api.stream(s),
      (i) => i.state.rows === 3,
      5_000,
    );
    expect(evicted.state.rows).toBe(3); // 13, 14 (11:00) and 17 (12:00)

    const before = await api.snapshot(s);
    // Rows are kept whole; declared columns are coerced ("9" is the int 9), timestamps kept as sent.
    const out = before.output
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(out.find((r) => r.id === 9)).toEqual({ id: 9, ts: at(10, 30), amount: 1.5 });
    expect(out.find((r) => r.id === 14)).toEqual({ id: 14, ts: "2024-01-01 11:00:00", amount: 1.5 });
    expect(before.committed).toBe(6);
    expect(before.progress).toHaveLength(6);
    expect(before.output.split("\n").filter(Boolean)).toHaveLength(14);

    for (const [i, b] of batches.entries()) {
      const res = await send(s, b);
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get("idempotency-key")).toBe(b.id);
      expect(JSON.parse(res.text)).toEqual({ ...first[i], replayed: true });
    }
    // Twice, and in reverse order, for good measure.
    for (const [i, b] of [...batches.entries()].reverse()) {
      expect(JSON.parse((await send(s, b)).text)).toEqual({ ...first[i], replayed: true });
    }

    const after = await api.snapshot(s);
    expect(after.output).toBe(before.output); // byte-identical
    expect(after.progress).toEqual(before.progress);
    expect(after.watermark).toBe(before.watermark);
    expect(after.committed).toBe(before.committed);
    expect(after.rows).toBe(before.rows);
    expect(after.sources).toEqual(before.sources);
  });

  test("a batch id reused with a different body is a 422 problem and changes nothing", async () => {
    const s = "replay-conflict";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2 });
    const original = [{ id: "x", ts: at(10) }];
    expect((await api.ingest(s, original, { batchId: "same-id", source: "a" })).emitted).toBe(1);
    const before = await api.snapshot(s);

    for (const body of [
      [{ id: "y", ts: at(11) }],
      [
        { id: "x", ts: at(10) },
        { id: "z", ts: at(10) },
      ],
    ]) {
      const res = await api.post(s, body, { batchId: "same-id", source: "a" });
      expect(res.status).toBe(422);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const problem = JSON.parse(res.text);
      expect(problem).toMatchObject({ status: 422, type: expect.stringMatching(/idempotency-key-reused$/) });
      expect(typeof problem.title).toBe("string");
      expect(problem.detail).toContain("same-id");
    }
    expect(await api.snapshot(s)).toEqual(before);
    // The original body still replays.
    expect(await api.ingest(s, original, { batchId: "same-id", source: "a" })).toMatchObject({ replayed: true, emitted: 1 });
  });
});

describe("deleting a stream", () => {
  test("a stream deleted and created again forgets its keys, output and batch ids", async () => {
    const s = "replay-delete";
    const config = { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2 };
    await api.putStream(s, config);
    const rows = [
      { id: "a", ts: at(10) },
      { id: "b", ts: at(10) },
    ];
    expect(await api.ingest(s, rows, { batchId: "d1" })).toMatchObject({ emitted: 2, replayed: false });
    const del = await api.request("DELETE", `/v1/streams/${s}`);
    expect(del.status).toBe(204);
    expect((await api.request("GET", `/v1/streams/${s}`)).status).toBe(404);
    expect((await api.request("GET", `/v1/streams/${s}/output`)).status).toBe(404);

    expect((await api.putStream(s, config)).status).toBe(201);
    const info = await api.stream(s);
    expect(info).toMatchObject({ watermark: 0, sources: {}, state: { rows: 0 }, batches: { committed: 0 } });
    expect(await api.outputText(s)).toBe("");
    // The same batch id and keys run fresh.
    expect(await api.ingest(s, rows, { batchId: "d1" })).toMatchObject({ emitted: 2, duplicates: 0, replayed: false, watermark: 0 });
    expect(await api.output(s)).toEqual(rows);
  });
});

describe("concurrent requests with one batch id", () => {
  test("eight identical POSTs at once: one runs, the others get its outcome, output has the rows once", async () => {
    const s = "same-id-concurrent";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 4 });
    // 3,000 rows, 2,500 distinct keys: big enough that the requests overlap the run.
    const rows = Array.from({ length: 3000 }, (_, i) => ({ id: `k${i % 2500}`, ts: at(10) + (i % 600) * 1000, i }));
    const N = 8;

    const attempt = async (): Promise<{ outcome: Outcome; conflicts: number }> => {
      let conflicts = 0;
      for (let tries = 0; tries < 60; tries++) {
        const res = await api.post(s, rows, { batchId: "one-batch", source: "producer" });
        if (res.status === 200) return { outcome: JSON.parse(res.text), conflicts };
        expect(res.status, res.text).toBe(409);
        const retryAfter = Number(res.headers.get("retry-after"));
        expect(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After: ${res.headers.get("retry-after")}`).toBe(true);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        conflicts++;
        await sleep(Math.min(retryAfter * 1000, 1000));
      }
      throw new Error("no 200 after 60 tries");
    };
    const results = await Promise.all(Array.from({ length: N }, attempt));

    const outcomes = results.map((r) => r.outcome);
    const fresh = outcomes.filter((o) => !o.replayed);
    expect(fresh).toHaveLength(1);
    const { replayed: _r, ...counts } = fresh[0];
    expect(counts).toMatchObject({ batchId: "one-batch", source: "producer", input: 3000, emitted: 2500, duplicates: 500, late: 0, rejected: [] });
    for (const o of outcomes) expect(o).toEqual({ ...fresh[0], replayed: o.replayed });

    const output = await api.output<{ id: string; i: number }>(s);
    expect(output).toHaveLength(2500);
    expect(output.map((r) => r.i)).toEqual(Array.from({ length: 2500 }, (_, i) => i)); // first copies, in input order
    const info = await api.stream(s);
    expect(info.batches.committed).toBe(1);
    expect(info.state.rows).toBe(2500);
    expect(await api.progress(s)).toHaveLength(1);
  });
});

import { expect, it } from "vitest";
import { at, call, createStream, json, output, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 };

it("a time in the key is one instant whatever its spelling", async () => {
  await createStream("ts-key", { ...base, key: ["device", "ts"], mode: "event-time-key" });
  const r = await post("ts-key", [
    { device: "d1", ts: "2024-01-01T10:00:00Z" },
    { device: "d1", ts: "2024-01-01T10:00:00.000Z" },
    { device: "d1", ts: at(10, 0) },
    { device: "d1", ts: "2024-01-01T11:00:00+01:00" },
  ]);
  expect(r).toMatchObject({ emitted: 1, duplicates: 3 });
});

it("a committed batch replays even after the limits were lowered", async () => {
  await createStream("limits-replay", base);
  const rows = Array.from({ length: 20 }, (_, i) => ({ id: `k${i}`, ts: at(10, 0) }));
  const first = await post("limits-replay", rows, { "idempotency-key": "big" });
  await call("PUT", "/v1/streams/limits-replay", { ...base, limits: { maxRows: 5 } });
  expect(await post("limits-replay", rows, { "idempotency-key": "big" })).toEqual({ ...first, replayed: true });
  expect((await call("POST", "/v1/streams/limits-replay/events", rows, { "idempotency-key": "new" })).status).toBe(413);
});

it("a batch resumed after a crash is planned with the config of its first attempt", async () => {
  await createStream("cfg-resume", base);
  const rows = [
    { id: "A", ts: at(10, 0), n: "x" },
    { id: "B", ts: at(10, 0), n: 2 },
  ];
  const crashed = await call("POST", "/v1/streams/cfg-resume/events", rows, { "idempotency-key": "b", "x-test-fault": "after-data" });
  expect(crashed.status).toBe(500);
  // The schema changes in between: `n` must now be an int, which A's "x" is not.
  await call("PUT", "/v1/streams/cfg-resume", { ...base, schema: { n: "int" } });
  const retry = await post("cfg-resume", rows, { "idempotency-key": "b" });
  expect(retry).toMatchObject({ emitted: 2, rejected: [] });
  expect(await output("cfg-resume")).toEqual(rows);
  // New batches follow the new schema.
  expect((await post("cfg-resume", [{ id: "C", ts: at(10, 0), n: "x" }])).rejected).toHaveLength(1);
});

it("reads are snapshots that say where to resume: X-Commit-Seq and commitSeq", async () => {
  await createStream("seq", base);
  for (let i = 0; i < 3; i++) await post("seq", { id: `k${i}`, ts: at(10, i) });
  const r = await call("GET", "/v1/streams/seq/output");
  expect(r.headers.get("x-commit-seq")).toBe("3");
  await r.arrayBuffer();
  const progress = (await json(call("GET", "/v1/streams/seq/progress"))).progress;
  expect(progress.map((p: any) => p.commitSeq)).toEqual([1, 2, 3]);
  await post("seq", { id: "k3", ts: at(10, 3) });
  const next = await call("GET", "/v1/streams/seq/output?after=3");
  expect(next.headers.get("x-commit-seq")).toBe("4");
  expect(new TextDecoder().decode(await next.arrayBuffer()).trim()).toBe(JSON.stringify({ id: "k3", ts: at(10, 3) }));
});

it("disabling a silent declared source retires it from the min watermark", async () => {
  const cfg = { ...base, sources: { a: {}, b: {} } };
  await createStream("retire", cfg);
  await post("retire", { id: "A", ts: at(10, 0) }, { "x-source": "a" });
  expect((await json(call("GET", "/v1/streams/retire"))).watermark).toBe(0);
  await call("PUT", "/v1/streams/retire", { ...cfg, sources: { a: {}, b: { disabled: true } } });
  expect((await json(call("GET", "/v1/streams/retire"))).watermark).toBe(at(9, 55));
});

it("describing a stream does not create storage in partitions that never held state", async () => {
  await createStream("quiet", { ...base, partitions: 8 });
  const d = await json(call("GET", "/v1/streams/quiet"));
  expect(d.state).toEqual({ rows: 0, bytes: 0, largestPartitionBytes: 0 });
  expect((await json(call("GET", "/v1/streams/quiet/state?partition=7"))).keys).toEqual([]);
});

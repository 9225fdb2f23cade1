import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { armFault, batchFaultKey, FAULT_POINTS } from "../../../src/instrument/faults";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { shardFor } from "../../../src/stream/shards";
import { at, call, committedRecords, createStream, json, output, post, settled } from "../helpers";

// A request that dies at each step of a batch, then the producer's retry with the
// same batch id: the output must hold every surviving row exactly once.

/**
 * The ledger's records (src/coordinator/ledger.ts): the ids of each begin record
 * (one per micro-batch not committed), the committed ids in commit order, and the
 * partitions' decision entries (one per partition per micro-batch: its id, the batches in it).
 */
async function records(name: string, partitions: number, shards = 1) {
  // Over every shard (a stream with several: shard k is `{name}#k`), shard 0's first.
  const coordinator = { begun: [] as string[][], committed: [] as string[], groups: 0 };
  for (let k = 0; k < shards; k++) {
    const one = await runInDurableObject(env.COORDINATOR.getByName(k === 0 ? name : `${name}#${k}`), (_c, state) => ({
      begun: state.storage.sql
        .exec<{ members: string }>("SELECT members FROM begun")
        .toArray()
        .map((r) => (JSON.parse(r.members) as string[][]).map((m) => m[1])),
      committed: committedRecords(state.storage.sql).map((r) => r.batch_id),
      // commit records: a small micro-batch's rides in its outbox row until the flush (src/output/outbox.ts)
      groups: state.storage.sql.exec<{ n: number }>("SELECT (SELECT count(*) FROM groups) + (SELECT count(*) FROM outbox WHERE members IS NOT NULL) AS n").one()
        .n,
    }));
    coordinator.begun.push(...one.begun);
    coordinator.committed.push(...one.committed);
    coordinator.groups += one.groups;
  }
  const entries = [];
  for (let p = 0; p < partitions; p++) {
    entries.push(
      ...(await runInDurableObject(env.PARTITION.getByName(`${name}/${p}`), (_p, state) => {
        // Small entries ride in the meta row (pending), others are rows of the ledger table.
        const pending = state.storage.sql.exec<{ pending: string | null }>("SELECT pending FROM meta").toArray()[0]?.pending;
        const rows = state.storage.sql
          .exec<{ batch: string; decisions: string }>("SELECT batch, decisions FROM ledger")
          .toArray()
          .map((r) => [r.batch, JSON.parse(r.decisions)] as [string, string[][]]);
        const inMeta = Object.entries(pending ? (JSON.parse(pending) as Record<string, [number, string[][]]>) : {}).map(
          ([id, [, d]]) => [id, d] as [string, string[][]],
        );
        return [...inMeta, ...rows].map(([id, d]) => ({ p, entry: id.startsWith("g-") ? "group" : id, batches: d.map((x) => x[0]) }));
      })),
    );
  }
  return { ...coordinator, entries };
}
const rows = [
  { id: "A", ts: at(10, 0) },
  { id: "B", ts: at(10, 1) },
  { id: "A", ts: at(10, 2) }, // duplicate of the first row
  { id: "C", ts: at(10, 3) },
  { id: "D", ts: at(10, 4) },
  { id: "E", ts: at(10, 5) },
  { id: "F", ts: at(10, 6) },
  { ts: at(10, 7) }, // rejected
];
const survivors = [rows[0], rows[1], rows[3], rows[4], rows[5], rows[6]];

describe.each(FAULT_POINTS)("crash %s", (point) => {
  // With 4 ingest shards too (DESIGN §12): "before" and "b1" are judged by different shards.
  it.each([
    [1, 1],
    [4, 1],
    [4, 4],
  ])("with %i partition(s), %i shard(s): the retry completes the batch exactly once", async (partitions, shards) => {
    const name = `crash-${point}-${partitions}-${shards}`;
    await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions, ...(shards > 1 ? { shards } : {}) });
    await post(name, [{ id: "Z", ts: at(9, 0) }], { "idempotency-key": "before" });
    if (shards > 1) {
      expect(shardFor("before", shards)).not.toBe(shardFor("b1", shards));
      await settled(name); // b1's shard judges by the watermark "before" moved, as with one shard
    }

    const crashed = await call("POST", `/v1/streams/${name}/events`, rows, { "idempotency-key": "b1", "x-test-fault": point });
    expect(crashed.status).toBe(500);
    expect(crashed.headers.get("content-type")).toBe("application/problem+json");
    // Nothing of the crashed batch is visible: no output, no commit, the watermark did not move.
    expect((await output(name)).map((r) => r.id)).toEqual(["Z"]);
    const mid = await json(call("GET", `/v1/streams/${name}`));
    expect(mid.batches.committed).toBe(1);
    expect(mid.watermark).toBe(at(8, 55));
    // One begin record for the crashed micro-batch; partitions that decided hold one entry for it (a group's), nothing per request.
    const held = await records(name, partitions, shards);
    expect(held).toMatchObject({ begun: [["b1"]], committed: ["before"], groups: 1 });
    // (With several shards "before"'s decisions stay until its own shard next calls those partitions: a forget rides on a shard's calls.)
    const ofB1 = held.entries.filter((e) => shards === 1 || !e.batches.includes("default\nbefore"));
    for (const e of ofB1) expect(e).toMatchObject({ entry: "group", batches: ["default\nb1"] });
    if (point !== "partition-midway") expect(new Set(ofB1.map((e) => e.p)).size).toBe(partitions);

    const retry = await post(name, rows, { "idempotency-key": "b1" });
    // (With several shards a batch's watermarkAfter is the one it was judged by: the clock moves it after.)
    const after = shards > 1 ? at(8, 55) : at(10, 1);
    expect(retry).toMatchObject({ replayed: false, input: 8, emitted: 6, duplicates: 1, late: 0, watermark: at(8, 55), watermarkAfter: after });
    expect(retry.rejected.map((r: any) => r.index)).toEqual([7]);
    const again = await post(name, rows, { "idempotency-key": "b1" });
    expect(again).toEqual({ ...retry, replayed: true });

    // Several shards are read shard after shard: Z's shard may come second.
    const first = shards === 1 || shardFor("before", shards) < shardFor("b1", shards);
    expect(await output(name)).toEqual(first ? [{ id: "Z", ts: at(9, 0) }, ...survivors] : [...survivors, { id: "Z", ts: at(9, 0) }]);
    const d = shards > 1 ? await settled(name) : await json(call("GET", `/v1/streams/${name}`));
    expect(d.state.rows).toBe(7);
    expect(d.batches.committed).toBe(2);
    // Committed: one row per id, one per group, no begin record left (the failed attempt's went with the commit).
    const done = await records(name, partitions, shards);
    expect(done).toMatchObject({ begun: [], groups: 2 });
    expect(done.committed.sort()).toEqual(["b1", "before"]);
  });
});

it("a batch retried after other batches moved on keeps its decisions", async () => {
  await createStream("crash-late", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
  const batch = [
    { id: "A", ts: at(10, 0) },
    { id: "B", ts: at(10, 0) },
  ];
  const crashed = await call("POST", "/v1/streams/crash-late/events", batch, { "idempotency-key": "slow", "x-test-fault": "after-marker" });
  expect(crashed.status).toBe(500);
  // Meanwhile a copy of A arrives in another batch, and the watermark moves far past 10:00.
  expect(
    await post("crash-late", [
      { id: "A", ts: at(10, 1) },
      { id: "C", ts: at(12, 0) },
    ]),
  ).toMatchObject({ emitted: 1, duplicates: 1 });
  // The retry is judged as it was first judged: A and B emitted (not late, not duplicates of themselves).
  const retry = await post("crash-late", batch, { "idempotency-key": "slow" });
  expect(retry).toMatchObject({ emitted: 2, duplicates: 0, late: 0, watermark: 0 });
  expect((await output("crash-late")).map((r) => r.id).sort()).toEqual(["A", "B", "C"]);
});

it("a Coordinator that restarts with a micro-batch begun judges its retry by the first attempt's watermark (the begin kept in the state record)", async () => {
  const name = "crash-restart";
  await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
  await post(name, [{ id: "A", ts: at(10, 0) }], { "idempotency-key": "b0" });
  const batch = [
    { id: "B", ts: at(10, 0) },
    { id: "C", ts: at(10, 1) },
  ];
  const crashed = await call("POST", `/v1/streams/${name}/events`, batch, { "idempotency-key": "b1", "x-test-fault": "after-decide" });
  expect(crashed.status).toBe(500);
  const stub = env.COORDINATOR.getByName(name);
  // As if the process had died with the micro-batch in flight: no failure handler ran, so the ledger holds no begin
  // record of it; only the state record it began with (written before its partitions were called) knows it.
  const begun = await runInDurableObject(stub, (_c, state) => {
    state.storage.sql.exec("DELETE FROM begun");
    return (JSON.parse(state.storage.sql.exec<{ s: string }>("SELECT s FROM state").one().s).begun?.members ?? []).map((m: string[]) => m[1]);
  });
  expect(begun).toEqual(["b1"]);
  await evictDurableObject(stub);
  // After the restart the watermark moves far past the crashed batch's rows…
  expect(await post(name, [{ id: "D", ts: at(10, 30) }], { "idempotency-key": "b2" })).toMatchObject({ emitted: 1, watermarkAfter: at(10, 25) });
  // …yet its retry is judged as first begun (watermark 09:55): its partitions' decisions stand, B and C are emitted, not late.
  expect(await post(name, batch, { "idempotency-key": "b1" })).toMatchObject({ replayed: false, emitted: 2, late: 0, duplicates: 0, watermark: at(9, 55) });
  expect((await output(name)).map((r) => r.id)).toEqual(["A", "D", "B", "C"]);
  expect(await records(name, 2)).toMatchObject({ begun: [], committed: ["b0", "b2", "b1"] });
});

it("the same when the micro-batch was begun by the commit before it (its begin rode in that commit's outbox row)", async () => {
  const name = "crash-restart-next";
  await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
  await post(name, [{ id: "A", ts: at(10, 0) }], { "idempotency-key": "b0" });
  const request = (batchId: string, rows: unknown[]): IngestRequest => ({
    sourceHeader: null,
    batchId,
    auth: { kind: "admin" },
    rows,
    identity: `identity-of-${batchId}`,
    bytes: 60,
  });
  const batch = [
    { id: "B", ts: at(10, 0) },
    { id: "C", ts: at(10, 1) },
  ];
  const stub = env.COORDINATOR.getByName(name);
  const begun = await runInDurableObject(stub, async (c, state) => {
    armFault(batchFaultKey(name, "b2"), "after-decide");
    // b1 runs; b2 arrives meanwhile, so b1's commit begins it (one row for both), then b2 fails after its partitions decided.
    const [[one], [two]] = await Promise.all([c.ingestMany([request("b1", [{ id: "X", ts: at(10, 0) }])]), c.ingestMany([request("b2", batch)])]);
    expect(one).toMatchObject({ kind: "done", outcome: { emitted: 1 } });
    expect(two).toMatchObject({ kind: "failed" });
    state.storage.sql.exec("DELETE FROM begun"); // as if the process had died before the failure handler ran
    const record = JSON.parse(state.storage.sql.exec<{ state: string }>("SELECT state FROM outbox ORDER BY id DESC LIMIT 1").one().state);
    return record.begun.members.map((m: string[]) => m[1]);
  });
  expect(begun).toEqual(["b2"]);
  await evictDurableObject(stub);
  expect(await post(name, [{ id: "D", ts: at(10, 30) }], { "idempotency-key": "b3" })).toMatchObject({ watermarkAfter: at(10, 25) });
  const [retry] = await runInDurableObject(stub, (c) => c.ingestMany([request("b2", batch)]));
  expect(retry).toMatchObject({ kind: "done", outcome: { replayed: false, emitted: 2, late: 0, duplicates: 0, watermark: at(9, 55) } });
  expect((await output(name)).map((r) => r.id)).toEqual(["A", "X", "D", "B", "C"]);
});

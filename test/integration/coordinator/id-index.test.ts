/**
 * Committed batch ids without a row each (src/coordinator/id-index.ts,
 * Coordinator migration 10): the ids of a full slice become one Bloom filter
 * row in the commit that fills it; a retry of any of them, before or after
 * the Coordinator restarts, is still answered from its record, a reused id
 * with another body is still refused, and a new id is still new. The slices
 * go with the window.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BITS_PER_ID, SLICE_IDS } from "../../../src/coordinator/id-index";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { ageCommits, at, call, committedRecords, createStream, json } from "../helpers";

const request = (batchId: string, id: string, identity = `body-of-${batchId}`): IngestRequest => ({
  sourceHeader: "s",
  batchId,
  auth: { kind: "admin" },
  rows: [{ id, ts: at(10, 0) }],
  identity,
  bytes: 30,
});

/** `n` batches of one row each, in one call (so in one or a few micro-batches). */
type Stub = ReturnType<typeof env.COORDINATOR.getByName>;

async function ingestAll(stub: Stub, n: number, from = 0): Promise<void> {
  const results = await runInDurableObject(stub, (c) => c.ingestMany(Array.from({ length: n }, (_, i) => request(`b${from + i}`, `k${from + i}`))));
  expect(results.filter((r) => r.kind !== "done")).toEqual([]);
}

const slices = (stub: Stub) =>
  runInDurableObject(stub, (_c, state) =>
    state.storage.sql
      .exec<{ first: number; last: number; n: number; bytes: number | null }>("SELECT first, last, n, length(bits) AS bytes FROM id_slices ORDER BY last")
      .toArray(),
  );

describe("committed batch ids without a row each", () => {
  it("a full slice becomes one filter row; every id in it replays, before and after a restart; a new id is new", async () => {
    const name = "ids-slices";
    await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
    const stub = env.COORDINATOR.getByName(name);
    const n = SLICE_IDS + 100;
    await ingestAll(stub, n);
    const [slice] = await slices(stub);
    expect(slice).toMatchObject({ first: 1 });
    expect(slice.n).toBeGreaterThanOrEqual(SLICE_IDS);
    expect(slice.bytes).toBe(Math.ceil((slice.n * BITS_PER_ID) / 32) * 4); // in 32-bit words
    // No row per id: each id's record is in its commit record.
    const records = await runInDurableObject(stub, (_c, state) => committedRecords(state.storage.sql));
    expect(records.map((r) => r.batch_id)).toEqual(Array.from({ length: n }, (_, i) => `b${i}`));

    const check = async () => {
      for (const i of [0, 1, 2_000, SLICE_IDS - 1, n - 1]) {
        const r = await stub.ingest(request(`b${i}`, `k${i}`));
        expect(r).toMatchObject({ kind: "replay", outcome: { batchId: `b${i}`, replayed: true, emitted: 1 } });
        // The same id with another body: refused, as before.
        expect(await stub.ingest(request(`b${i}`, `k${i}`, "another body"))).toEqual({ kind: "conflict" });
      }
    };
    await check();
    // Flushed, the commit records move to `groups` rows (each under 1 MiB); restarted, the filters and the ids since the last slice are read again.
    const rowsBytes = await runInDurableObject(stub, async (c, state) => {
      await c.flush();
      return state.storage.sql
        .exec<{ n: number }>("SELECT length(members) AS n FROM groups")
        .toArray()
        .map((r) => r.n);
    });
    expect(rowsBytes.length).toBeGreaterThan(0);
    for (const b of rowsBytes) expect(b).toBeLessThanOrEqual(1024 * 1024);
    await evictDurableObject(stub);
    await check();
    // An id never committed is new (its row a duplicate of k0's key, which it is).
    expect(await stub.ingest(request("fresh", "k0"))).toMatchObject({ kind: "done", outcome: { replayed: false, emitted: 0, duplicates: 1 } });
    const d = await json(call("GET", `/v1/streams/${name}`));
    expect(d.bookkeeping.batchesRemembered).toBe(n + 1);
  });

  it("a commit that rolls back takes its slice with it, and the index is read again", async () => {
    const name = "ids-rollback";
    await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 1 });
    const stub = env.COORDINATOR.getByName(name);
    await ingestAll(stub, SLICE_IDS - 1);
    const failing = await runInDurableObject(stub, async (c) => {
      const book = (c as unknown as { stores: { book: { next: (...a: unknown[]) => unknown } } }).stores.book;
      const next = book.next;
      book.next = () => {
        throw new Error("the commit failed after its ids were indexed");
      };
      try {
        return await c.ingestMany([request("last", "klast")]);
      } finally {
        book.next = next;
      }
    });
    expect(failing).toMatchObject([{ kind: "failed" }]);
    expect(await slices(stub)).toEqual([]);
    // Its retry commits it once and fills the slice then.
    expect(await stub.ingest(request("last", "klast"))).toMatchObject({ kind: "done", outcome: { replayed: false, emitted: 1 } });
    expect(await slices(stub)).toMatchObject([{ first: 1, last: SLICE_IDS, n: SLICE_IDS }]);
    expect(await stub.ingest(request("last", "klast"))).toMatchObject({ kind: "replay", outcome: { replayed: true } });
  });

  it("slices go with the window: a forgotten id is judged afresh and adds nothing", async () => {
    const name = "ids-window";
    await createStream(name, { key: ["id"], mode: "global", partitions: 2, idempotencyWindow: "1 minute" });
    const stub = env.COORDINATOR.getByName(name);
    await runInDurableObject(stub, (c) =>
      c.ingestMany(Array.from({ length: SLICE_IDS }, (_, i) => ({ ...request(`b${i}`, `k${i}`), rows: [{ id: `k${i}` }] }))),
    );
    await runInDurableObject(stub, (c) => c.ingestMany([{ ...request("newest", "kn"), rows: [{ id: "kn" }] }]));
    expect(await slices(stub)).toHaveLength(1);
    await ageCommits(name, 120_000);
    for (let i = 0; i < 20 && (await slices(stub)).length > 0; i++) await runDurableObjectAlarm(stub);
    expect(await slices(stub)).toEqual([]);
    expect((await json(call("GET", `/v1/streams/${name}`))).bookkeeping.batchesRemembered).toBe(1);
    // Forgotten: judged afresh, a duplicate of its own key (global mode remembers keys forever): no output added.
    expect(await stub.ingest({ ...request("b7", "k7"), rows: [{ id: "k7" }] })).toMatchObject({
      kind: "done",
      outcome: { replayed: false, emitted: 0, duplicates: 1 },
    });
    expect(await stub.ingest({ ...request("newest", "kn"), rows: [{ id: "kn" }] })).toMatchObject({ kind: "replay", outcome: { replayed: true } });
  });

  it("a record too large for the commit record (many rejected rows) is kept apart, and replays the same", async () => {
    const name = "ids-apart";
    await createStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 1 });
    const stub = env.COORDINATOR.getByName(name);
    const rows = Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? { id: `r${i}`, ts: at(10, 0) } : { id: `r${i}` }));
    const first = await stub.ingest({ ...request("big", "x"), rows });
    expect(first).toMatchObject({ kind: "done", outcome: { emitted: 30 } });
    const stored = await runInDurableObject(stub, (_c, state) => ({
      inline: committedRecords(state.storage.sql).map((r) => r.report),
      apart: state.storage.sql
        .exec<{ batch_id: string }>("SELECT batch_id FROM batches")
        .toArray()
        .map((r) => r.batch_id),
    }));
    expect(stored).toEqual({ inline: [null], apart: ["big"] });
    const again = await stub.ingest({ ...request("big", "x"), rows });
    expect(again).toEqual({ kind: "replay", source: "s", outcome: { ...(first as { outcome: object }).outcome, replayed: true } });
    await evictDurableObject(stub);
    expect(await stub.ingest({ ...request("big", "x"), rows })).toEqual(again);
    expect((await json(call("GET", `/v1/streams/${name}/progress`))).progress[0]).toMatchObject({ batchId: "big", emitted: 30, rejected: 30 });
  });
});

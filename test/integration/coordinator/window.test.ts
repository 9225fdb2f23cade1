/**
 * The idempotency window in a real Coordinator (DESIGN §9): committed batch
 * ids are remembered for the stream's `idempotencyWindow`, then the alarm
 * forgets them in bounded steps; a retry after that is judged afresh and adds
 * no output. Time is moved by ageing the stored commit times, so the test
 * needs no minute of waiting (test/e2e/window.test.ts waits the real minute).
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ageCommits, at, call, client, committedRecords, createStream, json, output, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", partitions: 2 };

/** Flushes, makes every commit of `stream` look `ms` older, publishes and runs the alarm (which prunes). */
async function age(stream: string, ms: number): Promise<void> {
  const stub = env.COORDINATOR.getByName(stream);
  await ageCommits(stream, ms);
  await runDurableObjectAlarm(stub); // publishes the manifest, then prunes
  await runDurableObjectAlarm(stub);
}

const bookkeeping = async (stream: string) => (await json(call("GET", `/v1/streams/${stream}`))).bookkeeping;

describe("the idempotency window", () => {
  it("is 24 hours unless set, at least a minute, and can be changed like the delay", async () => {
    await createStream("w-config", base);
    expect(await bookkeeping("w-config")).toMatchObject({ idempotencyWindow: 86_400_000, batchesRemembered: 0 });
    const tooShort = await call("PUT", "/v1/streams/w-config", { ...base, idempotencyWindow: "30 seconds" });
    expect(tooShort.status).toBe(400);
    expect(JSON.stringify(await tooShort.json())).toContain("idempotencyWindow");
    expect((await call("PUT", "/v1/streams/w-config", { ...base, idempotencyWindow: "366 days" })).status).toBe(400);
    const changed = await client.putStream("w-config", { ...base, idempotencyWindow: "2 hours" } as never);
    expect(changed.status).toBe(200);
    expect(await bookkeeping("w-config")).toMatchObject({ idempotencyWindow: 7_200_000 });
  });

  it("within it a retry replays and another body is a 422; after it the id is forgotten and its retry adds nothing", async () => {
    await createStream("w1", { ...base, idempotencyWindow: "1 minute" });
    const first = await post(
      "w1",
      [
        { id: "A", ts: at(10, 0) },
        { id: "B", ts: at(10, 0) },
      ],
      { "idempotency-key": "b1" },
    );
    expect(first).toMatchObject({ emitted: 2, replayed: false });
    expect(
      await post(
        "w1",
        [
          { id: "A", ts: at(10, 0) },
          { id: "B", ts: at(10, 0) },
        ],
        { "idempotency-key": "b1" },
      ),
    ).toMatchObject({ emitted: 2, replayed: true });
    const other = await call("POST", "/v1/streams/w1/events", [{ id: "C", ts: at(10, 0) }], { "idempotency-key": "b1" });
    expect(other.status).toBe(422);
    expect(await bookkeeping("w1")).toMatchObject({ batchesRemembered: 1, idempotencyWindow: 60_000 });

    // Past the window, but the watermark has not passed b1's event times: kept (within-watermark needs that).
    expect(
      await post(
        "w1",
        [
          { id: "D", ts: at(10, 0) + 30_000 },
          { id: "L", ts: at(9, 0) },
        ],
        { "idempotency-key": "b2" },
      ),
    ).toMatchObject({ emitted: 1, late: 1 });
    await age("w1", 120_000);
    expect(
      await post(
        "w1",
        [
          { id: "A", ts: at(10, 0) },
          { id: "B", ts: at(10, 0) },
        ],
        { "idempotency-key": "b1" },
      ),
    ).toMatchObject({ replayed: true });

    // The watermark passes them (10:02 − 1 minute): b1 and b2 are forgotten; the newest group stays (it holds the last commit number).
    await post("w1", [{ id: "E", ts: at(10, 2) }], { "idempotency-key": "b3" });
    await age("w1", 120_000);
    const book = await bookkeeping("w1");
    expect(book.batchesRemembered).toBe(1);
    expect(book.bytes).toBeGreaterThan(0);

    // Judged afresh: every row is late now, nothing is added; another body under the old id is a new batch.
    const again = await post(
      "w1",
      [
        { id: "A", ts: at(10, 0) },
        { id: "B", ts: at(10, 0) },
      ],
      { "idempotency-key": "b1" },
    );
    expect(again).toMatchObject({ replayed: false, emitted: 0, late: 2 });
    const reused = await post("w1", [{ id: "F", ts: at(10, 3) }], { "idempotency-key": "b2" });
    expect(reused).toMatchObject({ replayed: false, emitted: 1 });
    // The lanes of forgotten commits are read from the committed manifest.
    expect((await output("w1")).map((r) => r.id)).toEqual(["A", "B", "D", "E", "F"]);
    const late = (await (await call("GET", "/v1/streams/w1/late")).text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).row.id);
    expect(late).toEqual(["L", "A", "B"]);
    const tail = await call("GET", "/v1/streams/w1/output?after=2");
    expect(tail.headers.get("x-commit-seq")).toBe("5");
    expect(
      (await tail.text())
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).id),
    ).toEqual(["E", "F"]);
    // Progress lists what is remembered; commit numbers go on.
    const progress = (await json(call("GET", "/v1/streams/w1/progress"))).progress;
    expect(progress.map((p: { batchId: string }) => p.batchId)).toEqual(["b3", "b1", "b2"]);
    expect(progress.map((p: { commitSeq: number }) => p.commitSeq)).toEqual([3, 4, 5]);
  });

  it("a global stream forgets without the watermark: a retry is all duplicates", async () => {
    await createStream("w-global", { key: ["id"], mode: "global", partitions: 2, idempotencyWindow: "1 minute" });
    await post("w-global", [{ id: "A" }, { id: "A" }], { "idempotency-key": "g1" });
    await post("w-global", [{ id: "B" }], { "idempotency-key": "g2" });
    await age("w-global", 120_000);
    expect(await bookkeeping("w-global")).toMatchObject({ batchesRemembered: 1 });
    expect(await post("w-global", [{ id: "A" }, { id: "A" }], { "idempotency-key": "g1" })).toMatchObject({ replayed: false, emitted: 0, duplicates: 2 });
    expect((await output("w-global")).map((r) => r.id)).toEqual(["A", "B"]);
  });

  it("a shortened window is in force at once, though a prune step already waited for the old one's end", async () => {
    await createStream("w-shorter", { key: ["id"], mode: "global", partitions: 1, idempotencyWindow: "1 hour" });
    for (let i = 0; i < 3; i++) await post("w-shorter", [{ id: `k${i}` }], { "idempotency-key": `s${i}` });
    const stub = env.COORDINATOR.getByName("w-shorter");
    await runInDurableObject(stub, (c) => c.flush());
    await runDurableObjectAlarm(stub); // looks: nothing until the oldest commit is an hour old
    await runDurableObjectAlarm(stub);
    expect(await bookkeeping("w-shorter")).toMatchObject({ batchesRemembered: 3 });
    expect((await call("PUT", "/v1/streams/w-shorter", { key: ["id"], mode: "global", partitions: 1, idempotencyWindow: "1 minute" })).status).toBe(200);
    // Aged in place (not ageCommits(), which restarts the object and so would forget the wait anyway).
    await runInDurableObject(stub, (_c, state) => void state.storage.sql.exec("UPDATE groups SET committed_at = committed_at - 120000"));
    await runDurableObjectAlarm(stub);
    await runDurableObjectAlarm(stub);
    expect(await bookkeeping("w-shorter")).toMatchObject({ batchesRemembered: 1, idempotencyWindow: 60_000 });
  });

  it("forgotten ids leave no rows behind", async () => {
    await createStream("w-steps", { key: ["id"], mode: "global", partitions: 1, idempotencyWindow: "1 minute" });
    for (let i = 0; i < 5; i++) await post("w-steps", [{ id: `k${i}` }], { "idempotency-key": `s${i}` });
    const stub = env.COORDINATOR.getByName("w-steps");
    await ageCommits("w-steps", 120_000);
    await runDurableObjectAlarm(stub);
    expect(await bookkeeping("w-steps")).toMatchObject({ batchesRemembered: 1 });
    // Forgotten ids leave no rows behind.
    const rows = await runInDurableObject(stub, (_c, state) => ({
      // the ids' records (in the commit records since Coordinator migration 10) and their index's slices
      batches: committedRecords(state.storage.sql).length + state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM id_slices").one().n,
      groups: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM groups").one().n,
      // where the forgotten commits' outbox entries went: nothing points there any more (one record per flushed chunk
      // since Coordinator migration 9: the chunk holding the entry of the commit kept stays)
      flushed: state.storage.sql.exec<{ n: number }>("SELECT (SELECT count(*) FROM outbox_flushed) + (SELECT count(*) FROM outbox_chunks) AS n").one().n,
    }));
    expect(rows).toEqual({ batches: 1, groups: 1, flushed: 1 });
  });

  it("the conflicts lane's commit index (lane_refs) is forgotten with the ledger's commits", async () => {
    await createStream("w-lanes", { key: ["id"], mode: "global", partitions: 1, idempotencyWindow: "1 minute", schema: { n: "int" } });
    await post("w-lanes", [{ id: "A", n: 1 }], { "idempotency-key": "l1" });
    await post("w-lanes", [{ id: "A", n: 2 }], { "idempotency-key": "l2" }); // a conflict: the conflicts lane
    await post("w-lanes", [{ id: "B", n: 3 }], { "idempotency-key": "l3" });
    const refs = () =>
      runInDurableObject(env.COORDINATOR.getByName("w-lanes"), (_c, state) =>
        state.storage.sql
          .exec<{ seq: number; lane: string }>("SELECT seq, lane FROM lane_refs")
          .toArray()
          .map((r) => [r.seq, r.lane]),
      );
    expect(await refs()).toEqual([[2, "conflicts"]]);
    await age("w-lanes", 120_000);
    expect(await bookkeeping("w-lanes")).toMatchObject({ batchesRemembered: 1 });
    expect(await refs()).toEqual([]);
  });
});

/**
 * The idempotency window end to end (DESIGN §9), against a real local server
 * and its real clock: a committed batch id is replayed within the stream's
 * `idempotencyWindow` (here the least, one minute); after it the alarm forgets
 * the id on its own, and a retry is judged afresh and adds no output.
 */
import { describe, expect, test } from "vitest";
import { pollUntil, useServer } from "./server";

const { api } = useServer();

describe("the idempotency window", () => {
  test("a retry within the window replays; after it the id is forgotten and the retry adds nothing", async () => {
    const s = "window";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "1 second", partitions: 2, idempotencyWindow: "1 minute" });
    const t0 = Date.now() - 10_000;
    const rows = [
      { id: "A", ts: t0 },
      { id: "B", ts: t0 },
    ];
    expect(await api.ingest(s, rows, { batchId: "b1" })).toMatchObject({ emitted: 2, replayed: false });
    expect(await api.ingest(s, rows, { batchId: "b1" })).toMatchObject({ emitted: 2, replayed: true });
    expect((await api.post(s, [{ id: "X", ts: t0 }], { batchId: "b1" })).status).toBe(422);
    // The watermark passes b1's event times; b2 is the newest commit (kept: it holds the last commit number).
    expect(await api.ingest(s, [{ id: "C", ts: Date.now() }], { batchId: "b2" })).toMatchObject({ emitted: 1 });
    expect((await api.stream(s)).bookkeeping).toMatchObject({ batchesRemembered: 2, idempotencyWindow: 60_000 });

    // No request needed: the Coordinator's alarm forgets b1 a minute after its commit.
    const book = await pollUntil(
      async () => (await api.stream(s)).bookkeeping,
      (b) => b.batchesRemembered === 1,
      120_000,
      1_000,
    );
    expect(book.bytes).toBeGreaterThan(0);
    const again = await api.ingest(s, rows, { batchId: "b1" });
    expect(again).toMatchObject({ replayed: false, emitted: 0, late: 2 });
    expect((await api.output<{ id: string }>(s)).map((r) => r.id)).toEqual(["A", "B", "C"]);
  }, 180_000);
});

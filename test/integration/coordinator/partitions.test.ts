/**
 * The partition book (src/coordinator/partitions.ts) driven directly over a
 * real Coordinator's storage: which partitions the eviction fan-out visits by
 * the figures they last reported, and the forget-lists' cap and hand-over,
 * which no request-level test reaches.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_FORGET_PER_PARTITION, PartitionBook } from "../../../src/coordinator/partitions";
import { at, call, createStream, post } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 4 };

describe("the partition book", () => {
  it("visits a partition whose next expiry is due or unknown, never one with nothing to expire; the latest figures count", async () => {
    await createStream("pbook1", base);
    await runInDurableObject(env.COORDINATOR.getByName("pbook1"), async () => {
      const book = new PartitionBook(() => []);
      expect(book.totals()).toEqual({ rows: 0, bytes: 0 });
      book.record([
        { p: 0, rows: 1, bytes: 10, watermark: 0, nextExpiry: 100 },
        { p: 1, rows: 2, bytes: 20, watermark: 0, nextExpiry: null }, // nothing expires
        { p: 2, rows: 3, bytes: 30, watermark: 0 }, // not known: due at once
        { p: 3, rows: 4, bytes: 40, watermark: 0, nextExpiry: 101 },
      ]);
      expect(book.due(100).sort()).toEqual([0, 2]);
      expect(book.due(101).sort()).toEqual([0, 2, 3]);
      expect(book.totals()).toEqual({ rows: 10, bytes: 100 });
      // A partition's new report replaces its old one.
      book.record([{ p: 0, rows: 0, bytes: 0, watermark: 100, nextExpiry: null }]);
      expect(book.due(1_000).sort()).toEqual([2, 3]);
      expect(book.totals()).toEqual({ rows: 9, bytes: 90 });
    });
  });

  it("a commit that moves the watermark asks for the eviction alarm only when some partition holds a key due under it", async () => {
    await createStream("pbook-alarm", base);
    const stub = env.COORDINATOR.getByName("pbook-alarm");
    const alarmIn = () => runInDurableObject(stub, async (_c, state) => ((await state.storage.getAlarm()) ?? Infinity) - Date.now());
    const clear = () => runInDurableObject(stub, (_c, state) => state.storage.deleteAlarm());
    // Keys at 10:00 expire at 10:05; the watermark moves to 09:56 and then 10:00: nothing is due.
    await post("pbook-alarm", [
      { id: "a", ts: at(10, 0) },
      { id: "b", ts: at(10, 0) },
      { id: "c", ts: at(10, 1) },
    ]);
    await clear();
    await post("pbook-alarm", [{ id: "d", ts: at(10, 5) }]);
    expect(await alarmIn()).toBeGreaterThan(1_000); // the outbox's flush, not the fan-out's 200 ms
    // 10:06: the 10:00 keys are due, in whichever partitions hold them.
    await clear();
    await post("pbook-alarm", [{ id: "e", ts: at(10, 11) }]);
    expect(await alarmIn()).toBeLessThanOrEqual(1_000);
  });

  it("hands a partition its forget-list once, capped at MAX_FORGET_PER_PARTITION", async () => {
    await createStream("pbook2", base);
    await runInDurableObject(env.COORDINATOR.getByName("pbook2"), async () => {
      const book = new PartitionBook(() => []);
      for (let i = 0; i < MAX_FORGET_PER_PARTITION + 5; i++) book.forgetLater(0, `s\nb${i}`);
      book.forgetLater(1, "s\nother");
      const taken = book.takeForget(0);
      expect(taken).toHaveLength(MAX_FORGET_PER_PARTITION);
      expect(taken[0]).toBe("s\nb0");
      expect(book.takeForget(0)).toEqual([]);
      expect(book.takeForget(1)).toEqual(["s\nother"]);
    });
  });

  it("a deleted stream's forget-lists go with it: the new incarnation's partitions never held those ledgers", async () => {
    await createStream("pbook3", base);
    await post("pbook3", [
      { id: "a", ts: at(10, 0) },
      { id: "b", ts: at(10, 0) },
    ]);
    const stub = env.COORDINATOR.getByName("pbook3");
    const pending = () =>
      runInDurableObject(stub, (c) => {
        const book = (c as unknown as { stores: { partitions: PartitionBook } }).stores.partitions;
        return Array.from({ length: base.partitions }, (_, p) => book.takeForget(p)).flat().length;
      });
    await post("pbook3", [{ id: "c", ts: at(10, 1) }]);
    expect(await pending()).toBeGreaterThan(0); // committed ledgers wait for their partitions' next call
    await post("pbook3", [{ id: "d", ts: at(10, 2) }]);
    expect((await call("DELETE", "/v1/streams/pbook3")).status).toBe(204);
    expect(await pending()).toBe(0);
  });
});

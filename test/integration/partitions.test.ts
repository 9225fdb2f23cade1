/**
 * The partition book (src/coordinator/partitions.ts) driven directly over a
 * real Coordinator's storage: which partitions the eviction fan-out visits by
 * the figures they last reported, and the forget-lists' cap and hand-over,
 * which no request-level test reaches.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_FORGET_PER_PARTITION, PartitionBook } from "../../src/coordinator/partitions";
import { at, call, createStream, post } from "./helpers";

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
    await post("pbook3", [{ id: "a", ts: at(10, 0) }, { id: "b", ts: at(10, 0) }]);
    const stub = env.COORDINATOR.getByName("pbook3");
    const pending = () =>
      runInDurableObject(stub, (c) => {
        const book = (c as unknown as { partitions: PartitionBook }).partitions;
        return Array.from({ length: base.partitions }, (_, p) => book.takeForget(p)).flat().length;
      });
    await post("pbook3", [{ id: "c", ts: at(10, 1) }]);
    expect(await pending()).toBeGreaterThan(0); // committed ledgers wait for their partitions' next call
    await post("pbook3", [{ id: "d", ts: at(10, 2) }]);
    expect((await call("DELETE", "/v1/streams/pbook3")).status).toBe(204);
    expect(await pending()).toBe(0);
  });
});

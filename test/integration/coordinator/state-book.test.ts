/**
 * The Coordinator's state record (src/coordinator/state.ts) over a real
 * Coordinator's storage: a record carries the rooms' figures as they are in
 * memory; one written while they are unchanged (a micro-batch's begin)
 * carries the current record's as they are, without making them again, and
 * one written after any room changed carries the change.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { StateBook } from "../../../src/coordinator/state";
import { createStream } from "../helpers";

it("a record carries every change of the rooms, and the current figures as they are when none changed", async () => {
  await createStream("state-book", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
  await runInDurableObject(env.COORDINATOR.getByName("state-book"), (_c, state) => {
    const book = new StateBook(
      state.storage.sql,
      () => [],
      () => undefined,
    );
    const base = book.current();
    const begun = { id: "g1", at: 1, members: [] };

    // Unchanged: the begin's record reuses the current one's figures.
    const r1 = book.save(book.next({ begun }));
    expect(r1).toMatchObject({ v: base.v + 1, begun });
    expect(r1.advice).toBe(base.advice);
    expect(r1.partitions).toBe(base.partitions);
    expect(r1.counters).toBe(base.counters);

    // Each room's change is in the next record, and only then are they made anew.
    book.counters.add([["rows", "s", 3]]);
    const r2 = book.save(book.next({}));
    expect(r2.counters).toEqual([["rows", "s", 3]]);
    book.partitions.record([{ p: 1, rows: 5, bytes: 4096, watermark: 7, nextExpiry: 9 }]);
    const r3 = book.save(book.next({ begun: null }));
    expect(r3.partitions).toEqual([[1, 5, 4096, 7, 9]]);
    expect(r3.counters).toEqual([["rows", "s", 3]]);
    book.figures.observe(
      new Map(),
      { source: "s", counts: { input: 2, emitted: 1, duplicates: 1, late: 0, rejected: [] }, seen: { times: [10, 20], gaps: [10] } },
      null,
    );
    const r4 = book.save(book.next({}));
    expect(r4.advice.map(([s]) => s)).toEqual(["s"]);
    expect(r4.advice).not.toEqual(r3.advice);

    // Unchanged again: the same figures; and a book that reads the row back has what was written.
    const r5 = book.save(book.next({ begun }));
    expect(r5.advice).toBe(r4.advice);
    const again = new StateBook(
      state.storage.sql,
      () => [],
      () => undefined,
    );
    expect(again.current()).toEqual(JSON.parse(JSON.stringify(r5)));
    expect(again.counters.all()).toEqual([{ name: "rows", source: "s", n: 3 }]);
  });
});

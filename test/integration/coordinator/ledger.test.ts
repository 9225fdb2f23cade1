/**
 * The batch ledger (src/coordinator/ledger.ts) driven directly over a real
 * Coordinator's storage: a micro-batch's begin record, then its commit (one
 * row for the group, which holds each batch id's record: no row per id),
 * the replay answer and progress report read back from the stored record, the
 * commit index, and what each operation costs in SQL statements (the bench
 * counts them; the hot path must not grow).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BatchLedger, recordedOutcome, sameBody } from "../../../src/coordinator/ledger";
import { Outbox } from "../../../src/output/outbox";
import type { BatchOutcome } from "../../../src/stream/batch-outcome";
import { progressOf } from "../../../src/stream/batch-outcome";
import { createStream } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 };

/** The storage's SQL with a count of the statements run through it. */
function counting(sql: SqlStorage): { sql: SqlStorage; statements: () => number } {
  let n = 0;
  const wrapped = new Proxy(sql, {
    get(t, prop) {
      const v = Reflect.get(t, prop);
      if (prop !== "exec") return typeof v === "function" ? v.bind(t) : v;
      return (...args: unknown[]) => (n++, Reflect.apply(v as (...a: unknown[]) => unknown, t, args));
    },
  });
  return { sql: wrapped, statements: () => n };
}

function outcomeOf(source: string, batchId: string): BatchOutcome {
  return {
    batchId,
    source,
    replayed: false,
    watermark: 100,
    watermarkAfter: 200,
    input: 3,
    emitted: 1,
    duplicates: 1,
    late: 0,
    rejected: [{ index: 2, error: "n: not an int" }],
  };
}

describe("the batch ledger", () => {
  it("records a group's begin, then its commit, and answers from the stored record, one statement each", async () => {
    await createStream("ledger1", base);
    await runInDurableObject(env.COORDINATOR.getByName("ledger1"), async (_c, state) => {
      const { sql, statements } = counting(state.storage.sql);
      const ledger = new BatchLedger(sql, new Outbox(sql));
      const step = <T>(fn: () => T): [T, number] => {
        const before = statements();
        const out = fn();
        return [out, statements() - before];
      };

      // The first lookup reads the id index (its slices, the ids committed since) and whether ids from before it
      // remain, and counts the begin records held, once for the object's life; an id never seen then costs no statement.
      expect(step(() => ledger.known("s", "b1"))).toEqual([false, 4]);
      expect(step(() => ledger.row("s", "b1"))).toEqual([undefined, 0]);
      expect(step(() => ledger.lastSeq())).toEqual([0, 1]);
      const member = { source: "s", batchId: "b1", identity: "json:abc", watermark: 100, begunAt: 1_000, configVersion: 1 };
      expect(step(() => ledger.begin("g1", [member], 1_000))[1]).toBe(1);
      expect(step(() => ledger.row("s", "b1"))).toEqual([
        { body_hash: "json:abc", watermark: 100, begun_at: 1_000, config_version: 1, seq: null, report: null, begun: "g1" },
        1,
      ]);
      expect(ledger.known("s", "b1")).toBe(true);

      const outcome = outcomeOf("s", "b1");
      const report = progressOf(outcome, {
        commitSeq: 1,
        committedAt: 2_000,
        durationMs: 5,
        numRowsTotal: 1,
        numRowsUpdated: 1,
        numRowsRemoved: 0,
        stateBytes: 40,
      });
      const objects = { data: "streams/ledger1/data/x.ndjson#0+10", late: null, rejected: "streams/ledger1/rejected/x.ndjson#0+30" };
      // The group's row (each id's record in it), its begin record dropped: two statements for the whole group.
      expect(step(() => ledger.commit("g1", 1, 2_000, 5_000, [{ source: "s", batchId: "b1", identity: "json:abc", objects, outcome, report }]))[1]).toBe(2);

      // The cached commit number stays until forget() (the Coordinator calls it after each commit's transaction).
      expect(step(() => ledger.lastSeq())).toEqual([0, 0]);
      ledger.forget();
      expect(step(() => ledger.lastSeq())).toEqual([1, 1]);

      const row = ledger.row("s", "b1")!;
      expect(row.seq).toBe(1);
      expect(recordedOutcome(row, "s", "b1")).toEqual({ ...outcome, replayed: true });
      // Same JSON as the first answer, key order included, but for `replayed`.
      expect(JSON.stringify({ ...recordedOutcome(row, "s", "b1"), replayed: false })).toBe(JSON.stringify(outcome));
      expect(step(() => ledger.progress(10))).toEqual([[report], 1]);

      // The commit index lists only the batches that wrote to the lane; object refs come back as they are (no outbox statement).
      expect(step(() => ledger.commits("data", 0, 1, 100))).toEqual([[{ seq: 1, ref: objects.data }], 1]);
      expect(ledger.commits("late", 0, 1, 100)).toEqual([]);
      expect(ledger.commits("rejected", 0, 1, 100)).toEqual([{ seq: 1, ref: objects.rejected }]);
      expect(ledger.commits("data", 1, 1, 100)).toEqual([]);
    });
  });

  it("the progress log is the most recent reports, oldest first", async () => {
    await createStream("ledger2", base);
    await runInDurableObject(env.COORDINATOR.getByName("ledger2"), async (_c, state) => {
      const sql = state.storage.sql;
      const ledger = new BatchLedger(sql, new Outbox(sql));
      const reports = [1, 2, 3].map((seq) => {
        const outcome = outcomeOf("s", `b${seq}`);
        ledger.begin(`g${seq}`, [{ source: "s", batchId: `b${seq}`, identity: `h${seq}`, watermark: 100, begunAt: seq, configVersion: 1 }], seq);
        const report = progressOf(outcome, {
          commitSeq: seq,
          committedAt: 2_000 + seq,
          durationMs: 1,
          numRowsTotal: seq,
          numRowsUpdated: 1,
          numRowsRemoved: 0,
          stateBytes: 40,
        });
        ledger.commit(`g${seq}`, seq, 2_000 + seq, null, [
          { source: "s", batchId: `b${seq}`, identity: `h${seq}`, objects: { data: null, late: null, rejected: null }, outcome, report },
        ]);
        return report;
      });
      expect(ledger.progress(2)).toEqual(reports.slice(1));
      expect(ledger.lastSeq()).toBe(3);
    });
  });

  it("a batch's identity matches a record from before the parse mode was part of it", () => {
    expect(sameBody("json:abc", "json:abc")).toBe(true);
    expect(sameBody("abc", "ndjson:abc")).toBe(true); // the old bare hash
    expect(sameBody("abc", "ndjson:abd")).toBe(false);
    expect(sameBody("json:abc", "ndjson:abc")).toBe(false); // the mode is part of it now
  });
});

describe("rows written (what SQLite bills)", () => {
  it("a micro-batch of three writes its begin record once, then one row for the group (no row per id), and drops the begin record", async () => {
    await createStream("ledger-rows", base);
    await runInDurableObject(env.COORDINATOR.getByName("ledger-rows"), async (_c, state) => {
      let written = 0;
      // Each statement's cursor reports the rows it wrote once consumed (src/instrument/opcount.ts sums them the same way).
      const sql = new Proxy(state.storage.sql, {
        get(t, prop) {
          const v = Reflect.get(t, prop);
          if (prop !== "exec") return typeof v === "function" ? v.bind(t) : v;
          return (...args: unknown[]) => {
            const cursor = Reflect.apply(v as (...a: unknown[]) => SqlStorageCursor<Record<string, SqlStorageValue>>, t, args);
            const rows = cursor.toArray();
            written += cursor.rowsWritten;
            return { toArray: () => rows, one: () => rows[0], [Symbol.iterator]: () => rows[Symbol.iterator]() };
          };
        },
      });
      const ledger = new BatchLedger(sql, new Outbox(sql));
      const ids = ["b1", "b2", "b3"];
      ledger.begin(
        "g1",
        ids.map((batchId) => ({ source: "s", batchId, identity: `h-${batchId}`, watermark: 0, begunAt: 1, configVersion: 1 })),
        1,
      );
      expect(written).toBe(1);
      written = 0;
      const members = ids.map((batchId, i) => {
        const outcome = outcomeOf("s", batchId);
        const report = progressOf(outcome, {
          commitSeq: i + 1,
          committedAt: 2,
          durationMs: 1,
          numRowsTotal: 1,
          numRowsUpdated: 1,
          numRowsRemoved: 0,
          stateBytes: 1,
        });
        return { source: "s", batchId, identity: `h-${batchId}`, objects: { data: null, late: null, rejected: null }, outcome, report };
      });
      ledger.commit("g1", 1, 2, null, members);
      expect(written).toBe(1 + 1);
      written = 0;
      // Forgetting them: the group's row (the newest group is kept by the Coordinator; prune() itself takes what it is given).
      expect(ledger.prune(3)).toBe(3);
      expect(written).toBe(1);
    });
  });
});

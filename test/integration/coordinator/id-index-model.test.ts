/**
 * CommittedIds (src/coordinator/id-index.ts) against a model, over a real
 * Coordinator's SQLite storage: whatever the order of commits, prunes,
 * restarts (memory lost, storage kept) and commits that roll back, every id
 * committed and not yet forgotten is found at its commit number (never a
 * false "absent"), an id found exactly is one that is remembered, and the
 * slices stay one row per `slice` ids.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import { CommittedIds, type IdLocation } from "../../../src/coordinator/id-index";
import { createStream } from "../helpers";

const SLICE = 8;
type Op = { kind: "commit"; ids: number[] } | { kind: "prune"; fraction: number } | { kind: "restart" } | { kind: "rollback"; ids: number[] };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("commit" as const), ids: fc.array(fc.nat(60), { minLength: 1, maxLength: 12 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("prune" as const), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rollback" as const), ids: fc.array(fc.nat(60), { minLength: 1, maxLength: 12 }) }) },
);

const covers = (at: IdLocation | null, seq: number) =>
  at !== null && ("seq" in at ? at.seq === seq : at.ranges.some(([first, last]) => first <= seq && seq <= last));

it("finds every remembered id at its commit number, across prunes, restarts and rollbacks (property)", async () => {
  await createStream("ids-model", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 1 });
  await runInDurableObject(env.COORDINATOR.getByName("ids-model"), (_c, state) => {
    const sql = state.storage.sql;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
        sql.exec("DELETE FROM id_slices");
        // The model: the commit records (key, seq) still remembered, and how far the window forgot.
        let records: [string, number][] = [];
        let lastSeq = 0;
        let prunedUpTo = 0;
        const open = () => new CommittedIds(sql, (after) => records.filter(([, seq]) => seq > after), SLICE);
        let ids = open();
        // Ids are unique among those remembered: a forgotten one may come again (judged afresh, committed anew).
        const fresh = (n: number[]) => [...new Set(n.map((i) => `s\nb${i}`))].filter((k) => !records.some(([r]) => r === k));
        for (const o of ops) {
          if (o.kind === "commit") {
            const keys = fresh(o.ids);
            const committed = keys.map((k, i): [string, number] => [k, lastSeq + 1 + i]);
            state.storage.transactionSync(() => ids.add(committed));
            records.push(...committed);
            lastSeq += keys.length;
          } else if (o.kind === "rollback") {
            const keys = fresh(o.ids);
            expect(() =>
              state.storage.transactionSync(() => {
                ids.add(keys.map((k, i) => [k, lastSeq + 1 + i]));
                throw new Error("the commit rolled back");
              }),
            ).toThrow(/rolled back/);
            ids.forget(); // as the Coordinator does after a rollback
          } else if (o.kind === "prune") {
            const upTo = prunedUpTo + Math.floor((lastSeq - prunedUpTo) * o.fraction);
            state.storage.transactionSync(() => ids.prune(upTo));
            records = records.filter(([, seq]) => seq > upTo);
            prunedUpTo = upTo;
          } else {
            ids = open();
          }
          for (const [key, seq] of records) expect(covers(ids.locate(key), seq), `${key} at ${seq}`).toBe(true);
          for (let i = 0; i <= 60; i++) {
            const key = `s\nb${i}`;
            const at = ids.locate(key);
            if (at && "seq" in at) expect(records).toContainEqual([key, at.seq]);
          }
          const slices = sql.exec<{ n: number }>("SELECT count(*) AS n FROM id_slices").one().n;
          expect(slices).toBeLessThanOrEqual(Math.ceil(Math.max(0, lastSeq - prunedUpTo) / SLICE) + 1);
        }
      }),
      { numRuns: 150 },
    );
  });
});

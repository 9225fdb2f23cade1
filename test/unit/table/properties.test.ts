import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { appendToTable } from "../../../src/table/append";
import { compactTable } from "../../../src/table/compact";
import { memoryStore } from "../../../src/table/memory-store";
import { serveBucket, type ServedBucket } from "../../support/iceberg-reader";

/**
 * Against a model: the table holds exactly the rows of the appends whose
 * commit sequence is above every earlier one (repeats and stale sequences are
 * skipped), in commit order; compaction, anywhere in the sequence, changes
 * neither the rows nor which appends are skipped. Read back by icebird.
 */
const store = memoryStore();
let served: ServedBucket;
beforeAll(async () => {
  served = await serveBucket(store);
});
afterAll(() => served.close());

const SCHEMA = { id: "string", n: "long", seq: "long", i: "int" } as const;

type Op =
  | { kind: "append"; seq: number; rows: { id: string; n: number | null; extra?: number[] }[] }
  | { kind: "compact"; minFiles: number; targetBytes: number };

const appendOp = fc.record({
  kind: fc.constant("append" as const),
  seq: fc.integer({ min: 1, max: 12 }),
  rows: fc.array(
    fc.record({ id: fc.string({ maxLength: 6 }), n: fc.option(fc.integer()), extra: fc.option(fc.array(fc.nat(9), { maxLength: 2 }), { nil: undefined }) }),
    { maxLength: 4 },
  ),
});
const compactOp = fc.record({
  kind: fc.constant("compact" as const),
  minFiles: fc.integer({ min: 1, max: 4 }),
  targetBytes: fc.integer({ min: 0, max: 3000 }),
});
const ops = fc.array(fc.oneof({ arbitrary: appendOp, weight: 4 }, { arbitrary: compactOp, weight: 1 }), { maxLength: 10 });

/** A row as the table returns it, in comparable form (columns a file predates read as absent). */
const asRead = (r: Record<string, unknown>) => JSON.stringify([r.id, r.n === null ? null : String(r.n), Number(r.seq), Number(r.i), r.extra ?? null]);

let run = 0;
let compactions = 0;
test("any sequence of appends and compactions: exactly the rows of increasing commit sequences, none lost or repeated", async () => {
  await fc.assert(
    fc.asyncProperty(ops, async (sequence: Op[]) => {
      const stream = `p${run++}`;
      let recorded = 0;
      let compacted = false;
      const expected: string[] = [];
      const read = async () =>
        ((await served.read(stream).catch((e: Error) => (/metadata|version/.test(e.message) ? [] : Promise.reject(e)))) as Record<string, unknown>[]).map(
          asRead,
        );
      for (const op of sequence) {
        if (op.kind === "compact") {
          const before = await read();
          const result = await compactTable(store, stream, { ...op, now: 0 });
          compacted ||= result.compacted;
          expect((await read()).sort()).toEqual(before.sort());
          continue;
        }
        // `extra` is undeclared: present in some rows only, it becomes a string column when first seen.
        const rows = op.rows.map(({ extra, ...r }, i) => ({ ...r, seq: op.seq, i, ...(extra ? { extra } : {}) }));
        const result = await appendToTable(store, { stream, schema: SCHEMA, rows, commitSeq: op.seq, now: op.seq, baseUri: served.baseUri });
        const applies = rows.length > 0 && op.seq > recorded;
        expect(result.skipped).toBe(!applies);
        if (applies) {
          recorded = op.seq;
          expected.push(...rows.map((r) => JSON.stringify([r.id, r.n === null ? null : String(r.n), r.seq, r.i, r.extra ? JSON.stringify(r.extra) : null])));
        }
      }
      const actual = await read();
      compactions += compacted ? 1 : 0;
      if (compacted) expect([...actual].sort()).toEqual([...expected].sort());
      else expect(actual).toEqual(expected);
    }),
    {
      numRuns: 60,
      // A sequence that has files to compact, run first: the property meets a compaction on every run, not only when the draw has one.
      examples: [
        [
          [
            { kind: "append", seq: 1, rows: [{ id: "a", n: 1 }] },
            { kind: "append", seq: 2, rows: [{ id: "b", n: null, extra: [1] }] },
            { kind: "append", seq: 3, rows: [{ id: "c", n: 3 }] },
            { kind: "compact", minFiles: 2, targetBytes: 3000 },
          ],
        ],
      ],
    },
  );
  expect(compactions).toBeGreaterThan(0);
}, 60_000);

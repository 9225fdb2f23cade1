import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { capRejected, progressOf, type BatchOutcome } from "../../../src/stream/batch-outcome";
import { decodeStoredOutcome, encodeStoredOutcome } from "../../../src/stream/stored-outcome";

const time = fc.integer({ min: 0, max: 2 ** 42 });
const count = fc.nat({ max: 100_000 });

describe("the ledger's stored report", () => {
  it("gives back the outcome and progress report as first made, to the JSON text (a replay is the same body)", () => {
    fc.assert(
      fc.property(
        fc.record({
          batchId: fc.string({ minLength: 1 }),
          source: fc.string({ minLength: 1 }),
          watermark: time,
          watermarkAfter: time,
          input: count,
          emitted: count,
          duplicates: count,
          late: count,
          conflicts: fc.option(fc.oneof(fc.constant(0), count), { nil: undefined }),
        }),
        fc.array(fc.record({ index: fc.nat(), error: fc.string() }), { maxLength: 140 }),
        fc.record({
          commitSeq: fc.integer({ min: 1, max: 2 ** 40 }),
          committedAt: time,
          durationMs: fc.nat(),
          numRowsTotal: count,
          numRowsUpdated: count,
          numRowsRemoved: count,
          stateBytes: count,
        }),
        (o, rejected, extra) => {
          // As commitGroup builds them.
          const { batchId, source, watermark, watermarkAfter, conflicts, ...counts } = o;
          // conflicts (DESIGN §11) after late, as mergeDecisions orders them; absent in outcomes from before
          const outcome: BatchOutcome = {
            batchId,
            source,
            replayed: false,
            watermark,
            watermarkAfter,
            ...capRejected({ ...counts, ...(conflicts === undefined ? {} : { conflicts }), rejected }),
          };
          const progress = progressOf(outcome, extra);
          const back = decodeStoredOutcome(encodeStoredOutcome(outcome, progress), source, batchId, extra.commitSeq);
          expect(JSON.stringify(back.outcome)).toBe(JSON.stringify(outcome));
          expect(JSON.stringify(back.progress)).toBe(JSON.stringify(progress));
        },
      ),
    );
  });

  it("is a fraction of the first layout's size, which is still read", () => {
    const outcome: BatchOutcome = {
      batchId: "delivery-18-abcdef",
      source: "default",
      replayed: false,
      watermark: 1704102600017,
      watermarkAfter: 1704102600018,
      input: 1,
      emitted: 1,
      duplicates: 0,
      late: 0,
      rejected: [],
    };
    const progress = progressOf(outcome, {
      commitSeq: 19,
      committedAt: 1796129367454,
      durationMs: 5,
      numRowsTotal: 19,
      numRowsUpdated: 1,
      numRowsRemoved: 0,
      stateBytes: 196608,
    });
    const first = JSON.stringify({ outcome, progress });
    expect(decodeStoredOutcome(first, "default", "delivery-18-abcdef", 19)).toEqual({ outcome, progress });
    const compact = encodeStoredOutcome(outcome, progress);
    expect(compact.length).toBeLessThan(first.length / 5);
  });
});

/** A state record's stored text (src/coordinator/state.ts stateJson): the same record as JSON.stringify's, with the figures' JSON written once per list. */
import fc from "fast-check";
import { expect, test } from "vitest";
import { stateJson, type StoredState } from "../../../src/coordinator/state";

const num = fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.constant(Infinity));
const record: fc.Arbitrary<StoredState> = fc.record({
  v: fc.nat(),
  watermark: num,
  sources: fc.array(fc.tuple(fc.string(), fc.option(fc.integer()), fc.option(fc.integer()))),
  advice: fc.array(fc.tuple(fc.string(), fc.jsonValue())) as unknown as fc.Arbitrary<StoredState["advice"]>,
  partitions: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat(), fc.integer(), fc.option(fc.integer()))),
  counters: fc.array(fc.tuple(fc.string(), fc.string(), fc.integer())),
  begun: fc.option(
    fc.record({ id: fc.string(), at: fc.integer(), members: fc.array(fc.tuple(fc.string(), fc.string(), fc.string(), fc.integer(), fc.integer(), fc.nat())) }),
  ),
});

test("parses to what JSON.stringify's text parses to, for any record, and again for the next record that reuses its figures", () => {
  fc.assert(
    fc.property(record, fc.integer(), fc.option(fc.string()), (r, watermark, id) => {
      expect(JSON.parse(stateJson(r))).toEqual(JSON.parse(JSON.stringify(r)));
      // A begin's record: new version, watermark and begun, the same figure lists.
      const next: StoredState = { ...r, v: r.v + 1, watermark, begun: id === null ? null : { id, at: 1, members: [] } };
      expect(JSON.parse(stateJson(next))).toEqual(JSON.parse(JSON.stringify(next)));
    }),
  );
});

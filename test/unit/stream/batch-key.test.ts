import fc from "fast-check";
import { expect, test } from "vitest";
import { batchKey, parseBatchKey } from "../../../src/stream/batch-key";
import { NAME_PATTERN } from "../../../src/stream/name-rule";

test("a batch key reads back as its source and batch id, whatever the batch id holds (property)", () => {
  const source = fc.stringMatching(NAME_PATTERN);
  fc.assert(
    fc.property(source, fc.string(), (s, b) => {
      expect(parseBatchKey(batchKey(s, b))).toEqual({ source: s, batchId: b });
    }),
  );
  expect(batchKey("stripe", "evt_1")).toBe("stripe\nevt_1"); // the form stored in partitions' ledgers and receipts: it must not change
});

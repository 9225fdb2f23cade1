import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isHandedOut } from "../../../src/stream/handed-out";
import { compareKeyBytes, keyBytes } from "../../../src/stream/key-segment";
import type { HandedOut } from "../../../src/stream/handed-out";

// A move hands out an old partition's keys bucket after bucket, each
// bucket's in key order (their UTF-8 bytes: segments' order); the cursor
// after the first `i` of them is `after` (the last bucket whole) and the
// page (the last key of a bucket part way). isHandedOut must say, of every
// key, whether it is among those first `i`.
describe("isHandedOut", () => {
  it("is true of exactly the keys a move has handed out, whatever the cursor (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.integer({ min: -3, max: 6 }), fc.string({ unit: "grapheme", maxLength: 4 })), { selector: ([b, k]) => `${b} ${k}` }),
        fc.nat(),
        (keys, cut) => {
          const order = [...keys].sort(([b1, k1], [b2, k2]) => b1 - b2 || compareKeyBytes(keyBytes(false, k1), keyBytes(false, k2)));
          const i = order.length === 0 ? 0 : cut % (order.length + 1);
          const done = order.slice(0, i);
          const last = done[done.length - 1];
          const bucketDone = last !== undefined && (i === order.length || order[i][0] !== last[0]);
          // `after` is the last bucket handed out whole (null: none yet); a bucket part way is the page.
          const wholeBefore = order.slice(0, i).filter(([b]) => !order.slice(i).some(([b2]) => b2 === b));
          const cursor: HandedOut = bucketDone
            ? { after: last[0], page: null }
            : { after: wholeBefore.length > 0 ? wholeBefore[wholeBefore.length - 1][0] : null, page: last ? { bucket: last[0], key: last[1] } : null };
          order.forEach(([b, k], at) => expect(isHandedOut(cursor, b, k), `${b} ${JSON.stringify(k)} (${at} of ${i})`).toBe(at < i));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a key after the page in its bucket, or of a later bucket, is not handed out; nothing is before the first page", () => {
    const cursor = { after: 3, page: { bucket: 5, key: "m" } };
    expect(isHandedOut(cursor, 3, "zz")).toBe(true);
    expect(isHandedOut(cursor, 4, "zz")).toBe(true); // between: the move found nothing there to hand out, or it went whole
    expect(isHandedOut(cursor, 5, "m")).toBe(true);
    expect(isHandedOut(cursor, 5, "ma")).toBe(false);
    expect(isHandedOut(cursor, 6, "a")).toBe(false);
    expect(isHandedOut({ after: null, page: null }, -10, "a")).toBe(false);
    expect(isHandedOut({ after: null }, 0, "a")).toBe(false);
  });
});

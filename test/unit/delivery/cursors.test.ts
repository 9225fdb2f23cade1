import { describe, expect, it } from "vitest";
import { cursorOf, restOfShard, seqsOf, startCursors, withCursor } from "../../../src/delivery/cursors";
import { SHARD_SEQ_BASE, shardEnd, shardOfSeq } from "../../../src/stream/shards";

describe("a destination's read cursors, one per shard", () => {
  it("a shard without a stored cursor reads from its start; replacing one keeps the others", () => {
    expect(cursorOf([], 0)).toEqual({ seq: 0, index: 0 });
    expect(cursorOf([{ seq: 7, index: 2 }], 3)).toEqual({ seq: 3 * SHARD_SEQ_BASE, index: 0 });
    const one = [{ seq: 7, index: 2 }];
    const two = withCursor(one, 2, { seq: 2 * SHARD_SEQ_BASE + 5, index: 0 });
    expect(two).toEqual([
      { seq: 7, index: 2 },
      { seq: SHARD_SEQ_BASE, index: 0 },
      { seq: 2 * SHARD_SEQ_BASE + 5, index: 0 },
    ]);
    expect(one).toEqual([{ seq: 7, index: 2 }]); // not changed in place
    expect(withCursor(two, 0, { seq: 9, index: 0 })[0]).toEqual({ seq: 9, index: 0 });
    expect(startCursors(3)).toEqual([0, 1, 2].map((k) => ({ seq: k * SHARD_SEQ_BASE, index: 0 })));
  });

  it("shard k's commits lie between its start and shardEnd(k)", () => {
    for (const k of [0, 1, 5, 255]) {
      expect(shardOfSeq(cursorOf([], k).seq + 1)).toBe(k);
      expect(shardOfSeq(shardEnd(k) - 1)).toBe(k);
      expect(shardOfSeq(shardEnd(k))).toBe(k + 1);
      expect(seqsOf(k)).toEqual([k * SHARD_SEQ_BASE, (k + 1) * SHARD_SEQ_BASE]);
      expect(restOfShard(k * SHARD_SEQ_BASE + 7)).toEqual([k * SHARD_SEQ_BASE + 7, (k + 1) * SHARD_SEQ_BASE]);
    }
  });
});

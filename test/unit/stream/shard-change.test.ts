/**
 * Who judges a batch id while a stream's shard count grows (src/stream/shard-change.ts):
 * at every phase exactly one shard may begin it, and after the change its new
 * shard asks the old one first, for the idempotency window only.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { ownership, type ShardChange } from "../../../src/stream/shard-change";
import { shardFor } from "../../../src/stream/shards";

const counts = fc.tuple(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 16 })).filter(([a, b]) => a < b);

describe("ownership while shards grow", () => {
  test("preparing: only the old shard answers; it begins only the ids that stay", () => {
    fc.assert(
      fc.property(fc.string(), counts, (id, [from, to]) => {
        const change: ShardChange = { from, to, phase: "preparing", until: 0 };
        const answers = Array.from({ length: to }, (_, k) => ownership(id, k, from, change, 0).kind);
        const owner = shardFor(id, from);
        answers.forEach((a, k) => expect(a).toBe(k !== owner ? "moved" : shardFor(id, to) === owner ? "mine" : "known-only"));
      }),
    );
  });

  test("done: only the new shard judges; it asks the old one first until the window ends", () => {
    fc.assert(
      fc.property(fc.string(), counts, fc.integer({ min: 0, max: 2_000 }), (id, [from, to], now) => {
        const change: ShardChange = { from, to, phase: "done", until: 1_000 };
        const answers = Array.from({ length: to }, (_, k) => ownership(id, k, to, change, now));
        const owner = shardFor(id, to);
        const moved = shardFor(id, from) !== owner;
        answers.forEach((a, k) => {
          if (k !== owner) expect(a.kind).toBe("moved");
          else expect(a).toEqual(moved && now < 1_000 ? { kind: "consult", shard: shardFor(id, from) } : { kind: "mine" });
        });
      }),
    );
  });

  test("no change: the shard the count names", () => {
    expect(ownership("x", shardFor("x", 3), 3, null, 0)).toEqual({ kind: "mine" });
    expect(ownership("x", (shardFor("x", 3) + 1) % 3, 3, null, 0)).toEqual({ kind: "moved" });
  });
});

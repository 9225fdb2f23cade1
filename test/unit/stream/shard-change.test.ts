/**
 * Who judges a batch id while a stream's shard count grows (src/stream/shard-change.ts):
 * at every phase exactly one shard may begin it, and after the change its new
 * shard asks the old one first, for the idempotency window only.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { MAX_CHANGES_PER_WINDOW, openChanges, ownership, shardsHolding, type ShardChange } from "../../../src/stream/shard-change";
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
          else expect(a).toEqual(moved && now < 1_000 ? { kind: "consult", shards: [shardFor(id, from)] } : { kind: "mine" });
        });
      }),
    );
  });

  test("no change: the shard the count names", () => {
    expect(ownership("x", shardFor("x", 3), 3, null, 0)).toEqual({ kind: "mine" });
    expect(ownership("x", (shardFor("x", 3) + 1) % 3, 3, null, 0)).toEqual({ kind: "moved" });
  });

  test("several changes within one window: each id is judged by one shard, ever, and found again from wherever it is sent (a model of the shards' records)", () => {
    const W = 10_000;
    const step = fc.record({
      grow: fc.integer({ min: 1, max: 5 }),
      sends: fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.boolean()), { maxLength: 30 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(step, { minLength: 1, maxLength: MAX_CHANGES_PER_WINDOW }), (first, steps) => {
        /** which shard recorded each id (the shards' ledgers), and every answer's shard */
        const recorded = new Map<string, number>();
        let shards = first;
        let change: ShardChange | null = null;
        let now = 0;
        const send = (id: string) => {
          const owner = shardFor(id, shards);
          // Only the owner may answer: every other shard says moved.
          for (let k = 0; k < Math.max(shards, change?.to ?? 0); k++) if (k !== owner) expect(ownership(id, k, shards, change, now).kind).toBe("moved");
          const own = ownership(id, owner, shards, change, now);
          const knower = own.kind === "consult" ? own.shards.find((k) => recorded.get(id) === k) : undefined;
          if (knower !== undefined) return knower; // the old shard's answer stands
          if (recorded.get(id) === owner) return owner; // a replay here
          if (own.kind === "known-only") return null; // refused: retry once the change is done
          // Begun here: no other shard may know it (else a consult missed it and the id would be judged twice).
          expect(recorded.has(id), `${id} judged again at shard ${owner}, known at ${recorded.get(id)}`).toBe(false);
          recorded.set(id, owner);
          return owner;
        };
        const sendAll = (sends: [number, boolean][]) => {
          for (const [n] of sends) {
            const id = `id-${n}`;
            const answered = send(id);
            if (answered !== null) expect(answered).toBe(recorded.get(id));
            // A receipt's commit number is looked for where the id may lie: its recorder is among them.
            if (recorded.has(id)) expect(shardsHolding(id, shards, change, now)).toContain(recorded.get(id));
          }
        };
        for (const { grow, sends } of steps) {
          now += 100;
          const earlier = openChanges(change, now);
          change = { from: shards, to: shards + grow, phase: "preparing", until: 0, ...(earlier.length > 0 ? { earlier } : {}) };
          sendAll(sends.filter(([, during]) => during)); // while it prepares
          now += 100;
          change = { ...change, phase: "done", until: now + W };
          shards = change.to;
          sendAll(sends);
        }
        expect(openChanges(change, now)).toHaveLength(steps.length);
        // Once every window has passed, an id is its owner's alone.
        expect(ownership("late", shardFor("late", shards), shards, change, now + W + 1)).toEqual({ kind: "mine" });
      }),
    );
  });
});

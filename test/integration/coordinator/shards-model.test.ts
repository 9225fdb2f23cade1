import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scenarioArb } from "../../unit/scenarios";
import { call } from "../helpers";
import { againstModel } from "../model-stream";

// The reference model (test/unit/model.ts) against a real stream with 1 and with
// 4 ingest shards (DESIGN §12), and with a shard count changed (more or fewer)
// at random points: random batches, keys, sources, conflicts and watermark
// moves, each batch sent once every shard judges by the global watermark, so
// that each is judged as the model judges it (the model knows no shards).

let n = 0;

describe.each([1, 4])("the reference model against a stream of %i shard(s)", (shards) => {
  it("agrees on every batch's counts and watermark, the output and the final watermark (property)", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb(6, 6), async (s) => {
        await againstModel(`shm-${shards}-${n++}`, s, shards > 1 ? { shards } : {});
      }),
      { numRuns: 6 },
    );
  }, 120_000);
});

describe("the reference model against a stream whose shard count changes between batches", () => {
  it("agrees as with a fixed count: more and fewer shards at random points, up to three changes in one window (property)", async () => {
    const change = fc.record({ at: fc.integer({ min: 0, max: 2 }), to: fc.integer({ min: 1, max: 5 }) });
    let made = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb(6, 6), fc.array(change, { maxLength: 3 }), async (s, changes) => {
        const name = `shc-${n++}`;
        let shards = 2;
        const d = await againstModel(
          name,
          s,
          { shards: 2 },
          {
            before: async (i) => {
              for (const c of changes) {
                if (c.at !== i || c.to === shards) continue;
                const r = await call("PATCH", `/v1/streams/${name}`, { shards: c.to });
                expect(r.status, await r.clone().text()).toBe(202);
                shards = c.to;
                made++;
              }
            },
          },
        );
        expect(d.config.intakeShards ?? d.config.shards).toBe(shards);
      }),
      { numRuns: 10 },
    );
    expect(made, "shard changes made over the runs").toBeGreaterThan(0);
  }, 180_000);
});

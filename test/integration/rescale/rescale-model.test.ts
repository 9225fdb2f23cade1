import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scenarioArb } from "../../unit/scenarios";
import { call, json } from "../helpers";
import { againstModel } from "../model-stream";

// The reference model (test/unit/model.ts), which knows nothing of partitions,
// against a real stream rescaled to a random count part way through: random
// batches, keys, sources, conflicts and watermark moves, the move stepped a
// random number of alarms between batches (none: every key read through).
// Every batch's counts and watermark, and the output, are the model's. With
// several ingest shards too (each batch sent once every shard judges by the
// global watermark): a shard that has not heard of the switch is fenced by
// the old partitions and takes the new map (src/coordinator/rescaling.ts).

let n = 0;

describe.each([1, 3])("the reference model against a stream of %i shard(s) rescaled part way", (shards) => {
  it("agrees on every batch, the output and the final watermark, whenever the move runs (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        scenarioArb(6, 6),
        fc.nat(6),
        fc.integer({ min: 1, max: 9 }),
        fc.array(fc.nat(3), { minLength: 8, maxLength: 8 }),
        async (s, at, target, steps) => {
          const name = `rsm-${shards}-${n++}`;
          const coordinator = env.COORDINATOR.getByName(name);
          const last = s.batches.filter((b) => b.rows.length > 0).length - 1;
          let rescaled = false;
          const d = await againstModel(name, s, shards > 1 ? { shards } : {}, {
            before: async (i) => {
              if (i === Math.min(at, last) && target !== s.partitions) {
                const r = await call("PATCH", `/v1/streams/${name}`, { partitions: target });
                expect(r.status, await r.clone().text()).toBe(202);
                rescaled = true;
              }
              if (rescaled) for (let k = 0; k < steps[i % steps.length]; k++) await runDurableObjectAlarm(coordinator);
            },
            // The move ends (text keys moved; this scenario's keys are text), and the stream is the new count's.
            beforeFinal: async () => {
              for (let k = 0; k < 100 && (await json(call("GET", `/v1/streams/${name}`))).rescale; k++) await runDurableObjectAlarm(coordinator);
            },
          });
          expect(d.rescale).toBeUndefined();
          if (rescaled) expect(d.config.partitions).toBe(target);
        },
      ),
      { numRuns: shards > 1 ? 8 : 12 },
    );
  }, 180_000);
});

import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReferenceModel } from "../../unit/model";
import { configBody, materialize, modelSpec, NOW, scenarioArb, SECOND, SKEW } from "../../unit/scenarios";
import { call, client, json, settled } from "../helpers";

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
          const put = await call("PUT", `/v1/streams/${name}`, { ...configBody(s), ...(shards > 1 ? { shards } : {}) });
          expect(put.status, await put.clone().text()).toBe(201);
          const now = Date.now();
          const model = new ReferenceModel({ ...modelSpec(s), now });
          const future = (r: unknown) =>
            r !== null && typeof r === "object" && (r as { ts?: unknown }).ts === NOW + SKEW + SECOND ? { ...r, ts: now + SKEW + 60 * SECOND } : r;
          const kept: string[] = [];
          const batches = materialize(s)
            .filter((b) => b.rows.length > 0)
            .map((b) => ({ ...b, rows: b.rows.map(future) }));
          const coordinator = env.COORDINATOR.getByName(name);
          let rescaled = false;
          for (const [i, b] of batches.entries()) {
            if (i === Math.min(at, batches.length - 1) && target !== s.partitions) {
              const r = await call("PATCH", `/v1/streams/${name}`, { partitions: target });
              expect(r.status, await r.clone().text()).toBe(202);
              rescaled = true;
            }
            if (rescaled) for (let k = 0; k < steps[i % steps.length]; k++) await runDurableObjectAlarm(coordinator);
            if (shards > 1) await settled(name);
            const want = model.runBatch(b.source, b.rows);
            const got = await client.ingest(name, { rows: b.rows, headers: { "x-source": b.source, "idempotency-key": `b${i}` } });
            const count = (...d: string[]) => want.decisions.filter((x) => d.includes(x)).length;
            expect({ emitted: got.emitted, late: got.late, duplicates: got.duplicates, rejected: got.rejected.length }, `batch ${i}`).toEqual({
              emitted: count("e"),
              late: count("l"),
              duplicates: count("d", "c"),
              rejected: count("r", "x"),
            });
            expect(got.watermark, `batch ${i}`).toBe(want.watermark);
            for (const r of want.emitted) kept.push(JSON.stringify(r));
          }
          const rows = (await client.output(name)).rows.map((r) => JSON.stringify(r)).sort();
          expect(rows).toEqual(kept.sort());
          // The move ends (text keys moved; this scenario's keys are text), and the stream is the new count's.
          for (let k = 0; k < 100 && (await json(call("GET", `/v1/streams/${name}`))).rescale; k++) await runDurableObjectAlarm(coordinator);
          const d = shards > 1 ? await settled(name) : await json(call("GET", `/v1/streams/${name}`));
          expect(d.rescale).toBeUndefined();
          if (rescaled) expect(d.config.partitions).toBe(target);
          expect(d.watermark).toBe(model.watermark);
          expect(d.batches.committed).toBe(batches.length);
        },
      ),
      { numRuns: shards > 1 ? 8 : 12 },
    );
  }, 180_000);
});

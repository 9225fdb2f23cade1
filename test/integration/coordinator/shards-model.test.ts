import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReferenceModel } from "../../unit/model";
import { configBody, materialize, modelSpec, NOW, scenarioArb, SECOND, SKEW } from "../../unit/scenarios";
import { call, client, json, settled } from "../helpers";

// The reference model (test/unit/model.ts) against a real stream with 1 and with
// 4 ingest shards (DESIGN §12): random batches, keys, sources, conflicts and
// watermark moves, each batch sent once every shard judges by the global
// watermark, so that each is judged as the model judges it.

let n = 0;

describe.each([1, 4])("the reference model against a stream of %i shard(s)", (shards) => {
  it("agrees on every batch's counts and watermark, the output and the final watermark (property)", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb(6, 6), async (s) => {
        const name = `shm-${shards}-${n++}`;
        const put = await call("PUT", `/v1/streams/${name}`, { ...configBody(s), ...(shards > 1 ? { shards } : {}) });
        expect(put.status, await put.clone().text()).toBe(201);
        // The model's clock is the server's; a row the scenario puts in the future (past NOW + SKEW) is put past the real one.
        const now = Date.now();
        const model = new ReferenceModel({ ...modelSpec(s), now });
        const future = (r: unknown) =>
          r !== null && typeof r === "object" && (r as { ts?: unknown }).ts === NOW + SKEW + SECOND ? { ...r, ts: now + SKEW + 60 * SECOND } : r;
        const kept: string[] = [];
        // A batch with no rows is refused by the service (400) before anything: neither side runs it.
        const batches = materialize(s)
          .filter((b) => b.rows.length > 0)
          .map((b) => ({ ...b, rows: b.rows.map(future) }));
        for (const [i, b] of batches.entries()) {
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
          expect(got.watermark, `batch ${i} is judged by the global watermark`).toBe(want.watermark);
          for (const r of want.emitted) kept.push(JSON.stringify(r));
        }
        // The output holds what the model emitted (read shard after shard: compared as sets of rows).
        const rows = (await client.output(name)).rows.map((r) => JSON.stringify(r)).sort();
        expect(rows).toEqual(kept.sort());
        const d = shards > 1 ? await settled(name) : await json(call("GET", `/v1/streams/${name}`));
        expect(d.watermark).toBe(model.watermark);
        expect(d.batches.committed).toBe(batches.length);
      }),
      { numRuns: 6 },
    );
  }, 120_000);
});

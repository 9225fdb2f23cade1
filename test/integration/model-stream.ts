import { expect } from "vitest";
import { ReferenceModel } from "../unit/model";
import { configBody, materialize, modelSpec, NOW, SECOND, SKEW, type Scenario } from "../unit/scenarios";
import { call, client, json, settled } from "./helpers";

/** What a run against the model may do around its batches (a shard change, a rescale's steps). */
export interface ModelRunHooks {
  /** before batch i is sent (and before the stream settles) */
  before?: (i: number) => Promise<void>;
  /** after the output is checked, before the final figures are read (a move brought to its end) */
  beforeFinal?: () => Promise<void>;
}

/**
 * A scenario (test/unit/scenarios.ts) against the reference model, which
 * knows nothing of shards or partitions, on a new stream `name` of the
 * scenario's config and `extra`: each batch's counts and watermark are the
 * model's (a sharded stream's batch is sent once every shard judges by the
 * global watermark), the output holds what the model emitted, the final
 * watermark and commit count are its, and every batch's retry replays what
 * it answered. Returns the stream as GET shows it at the end.
 */
export async function againstModel(name: string, s: Scenario, extra: Record<string, unknown>, hooks: ModelRunHooks = {}): Promise<any> {
  const put = await call("PUT", `/v1/streams/${name}`, { ...configBody(s), ...extra });
  expect(put.status, await put.clone().text()).toBe(201);
  const sharded = typeof extra.shards === "number" && extra.shards > 1;
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
  const answered: { emitted: number }[] = [];
  const send = (b: (typeof batches)[number], i: number) => client.ingest(name, { rows: b.rows, headers: { "x-source": b.source, "idempotency-key": `b${i}` } });
  for (const [i, b] of batches.entries()) {
    await hooks.before?.(i);
    if (sharded) await settled(name);
    const want = model.runBatch(b.source, b.rows);
    const got = await send(b, i);
    const count = (...d: string[]) => want.decisions.filter((x) => d.includes(x)).length;
    expect({ emitted: got.emitted, late: got.late, duplicates: got.duplicates, rejected: got.rejected.length }, `batch ${i}`).toEqual({
      emitted: count("e"),
      late: count("l"),
      duplicates: count("d", "c"),
      rejected: count("r", "x"),
    });
    expect(got.watermark, `batch ${i} is judged by the global watermark`).toBe(want.watermark);
    for (const r of want.emitted) kept.push(JSON.stringify(r));
    answered.push(got);
  }
  // The output holds what the model emitted (read shard after shard: compared as sets of rows).
  const rows = (await client.output(name)).rows.map((r) => JSON.stringify(r)).sort();
  expect(rows).toEqual(kept.sort());
  await hooks.beforeFinal?.();
  const d = sharded ? await settled(name) : await json(call("GET", `/v1/streams/${name}`));
  expect(d.watermark).toBe(model.watermark);
  expect(d.batches.committed).toBe(batches.length);
  // Every batch's retry replays its answer, wherever the stream sends it now.
  for (const [i, b] of batches.entries()) expect(await send(b, i), `batch ${i} again`).toMatchObject({ replayed: true, emitted: answered[i].emitted });
  return d;
}

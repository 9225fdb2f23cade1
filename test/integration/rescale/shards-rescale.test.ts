/**
 * An online rescale of a stream of several ingest shards (DESIGN §12, issue
 * #32): shard 0 fences the old partitions before handing over their pending
 * decisions, so a shard still routing by the old map is told so, takes the
 * new map from shard 0 and runs its micro-batch again; a switch cut short
 * after the fences is completed by the first shard that meets one; when the
 * move ends every shard routes by the new map alone. Every id is kept once,
 * repeats are dropped whichever shard judges them and wherever the kept copy
 * lies, and every key is found afterwards.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { batchFaultKey, holdRun } from "../../../src/instrument/faults";
import { shardFor } from "../../../src/stream/shards";
import { at, call, createStream, json, moveUntilDone, output, post, settled } from "../helpers";

const SHARDS = 3;
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 3, shards: SHARDS };

/** A batch id that shard `k` judges (the Worker routes by it). */
function idFor(k: number, tag: string): string {
  for (let i = 0; ; i++) if (shardFor(`${tag}-${i}`, SHARDS) === k) return `${tag}-${i}`;
}

/** Every shard's own view of the map (shard k's locate()). */
const maps = (stream: string) =>
  Promise.all(
    Array.from({ length: SHARDS }, async (_, k) => {
      const at = await env.COORDINATOR.getByName(k === 0 ? stream : `${stream}#${k}`).locate();
      return { mapVersion: at!.mapVersion, partitions: at!.config.partitions, rescale: at!.rescale !== null };
    }),
  );

const rows = (ids: string[], minute: number) => ids.map((id) => ({ id, ts: at(10, minute) }));

describe("PATCH partitions on a stream of several shards", () => {
  it("a shard's micro-batch in flight across the switch is fenced, takes the new map and commits once; repeats are dropped on every shard", async () => {
    const s = "rescale-shards";
    await createStream(s, base);
    const sent = new Set<string>();
    for (let k = 0; k < SHARDS; k++) {
      const ids = Array.from({ length: 6 }, (_, i) => `k${k}-${i}`);
      expect((await post(s, rows(ids, 0), { "idempotency-key": idFor(k, "fill") })).emitted).toBe(6);
      for (const id of ids) sent.add(id);
    }
    await settled(s);
    // Shard 1's batch begins under the old map and is held in flight while shard 0 switches.
    const held = idFor(1, "held");
    const hold = holdRun(batchFaultKey(s, held));
    const inFlight = post(s, rows(["k0-0", "new-1", "new-2"], 1), { "idempotency-key": held });
    await hold.reached;
    const started = await call("PATCH", `/v1/streams/${s}`, { partitions: 5 });
    expect(started.status, await started.clone().text()).toBe(202);
    expect((await maps(s))[1]).toMatchObject({ mapVersion: 1, partitions: 3 }); // shard 1 has not heard
    hold.release();
    expect(await inFlight).toMatchObject({ emitted: 2, duplicates: 1 });
    sent.add("new-1").add("new-2");
    expect((await maps(s))[1]).toEqual({ mapVersion: 2, partitions: 5, rescale: true }); // told by a fence, it took shard 0's map
    // The retry replays; a repeat through another shard, of a key not yet moved, is a duplicate.
    expect(await post(s, rows(["k0-0", "new-1", "new-2"], 1), { "idempotency-key": held })).toMatchObject({ replayed: true, emitted: 2 });
    expect(await post(s, rows(["new-1", "k2-3", "fresh"], 2), { "idempotency-key": idFor(2, "repeat") })).toMatchObject({ emitted: 1, duplicates: 2 });
    sent.add("fresh");
    const d = await moveUntilDone(s);
    expect(d.config.partitions).toBe(5);
    expect(d.state.rows).toBe(sent.size);
    // The end reached every shard: none reads through the old partitions, which are gone.
    expect(await maps(s)).toEqual(Array.from({ length: SHARDS }, () => ({ mapVersion: 2, partitions: 5, rescale: false })));
    for (let k = 0; k < SHARDS; k++)
      expect((await post(s, rows([`k${k}-1`, `k${(k + 1) % SHARDS}-2`], 3), { "idempotency-key": idFor(k, "after") })).duplicates).toBe(2);
    expect((await output(s)).map((r) => r.id).sort()).toEqual([...sent].sort());
    for (const id of ["k0-0", "k1-5", "new-2", "fresh"]) {
      const found = await json(call("GET", `/v1/streams/${s}/state?row=${encodeURIComponent(JSON.stringify({ id, ts: at(10, 0) }))}`));
      expect(found.keys, id).toHaveLength(1);
    }
  });

  it("a switch cut short after the fences (shard 0 crashed) is completed by the first shard that meets one", async () => {
    const s = "rescale-shards-cut";
    await createStream(s, base);
    expect((await post(s, rows(["a", "b", "c", "d"], 0), { "idempotency-key": idFor(2, "first") })).emitted).toBe(4);
    await settled(s);
    const { epoch } = (await env.COORDINATOR.getByName(s).locate())!;
    // What start() does before it switches: every old partition fenced, naming the new map. Then nothing (a crash).
    for (let p = 0; p < 3; p++) await env.PARTITION.getByName(`${s}/${p}`).fence(epoch, { version: 2, partitions: 4 });
    expect((await maps(s)).map((m) => m.mapVersion)).toEqual([1, 1, 1]);
    // Shard 1 meets a fence: shard 0 completes the switch, and shard 1 judges by the new map, reading the old partitions through.
    expect(await post(s, rows(["a", "e"], 1), { "idempotency-key": idFor(1, "next") })).toMatchObject({ emitted: 1, duplicates: 1 });
    const during = await json(call("GET", `/v1/streams/${s}`));
    expect(during.rescale).toMatchObject({ from: 3, to: 4 });
    expect((await maps(s)).slice(0, 2)).toEqual([
      { mapVersion: 2, partitions: 4, rescale: true },
      { mapVersion: 2, partitions: 4, rescale: true },
    ]);
    // Shard 2 has not met a fence yet: it does now, and routes by the same map.
    expect(await post(s, rows(["b", "f"], 1), { "idempotency-key": idFor(2, "then") })).toMatchObject({ emitted: 1, duplicates: 1 });
    const d = await moveUntilDone(s);
    expect(d.config.partitions).toBe(4);
    expect(d.state.rows).toBe(6);
    expect(await post(s, rows(["c", "d", "e", "f"], 2), { "idempotency-key": idFor(0, "last") })).toMatchObject({ emitted: 0, duplicates: 4 });
  });

  it("hashed keys that never expire still can't be rescaled", async () => {
    await createStream("rescale-hashed-global", { key: ["id"], mode: "global", partitions: 2, shards: 2, stateKeys: "hashed" });
    const r = await call("PATCH", "/v1/streams/rescale-hashed-global", { partitions: 3 });
    expect(r.status).toBe(409);
    expect(((await r.json()) as { type: string }).type).toMatch(/rescale-not-supported/);
  });
});

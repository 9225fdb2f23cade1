/**
 * An online rescale through the HTTP API (PATCH /v1/streams/{stream}):
 * batches with repeats before, during and after the move; the output is
 * every id exactly once, duplicates are dropped whichever partition set
 * holds the kept copy, the state reader finds every key, and the old
 * partitions are dropped once drained.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { at, call, createStream, json, moveUntilDone, output, post } from "../helpers";

const rowsOf = (ids: number[], ts: number) => ids.map((i) => ({ id: `evt-${i}`, ts, v: i }));

describe("PATCH partitions on a live stream", () => {
  for (const stateKeys of ["text", "hashed"] as const) {
    it(`${stateKeys} keys: 3 → 5 partitions while batches keep coming, every id once, every key found`, async () => {
      const stream = `rescale-${stateKeys}`;
      await createStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 3, stateKeys, volatile: ["v"] });
      const sent = new Set<number>();
      const send = async (ids: number[], minute: number) => {
        const r = await post(stream, rowsOf(ids, at(10, minute)));
        for (const i of ids) sent.add(i);
        return r;
      };
      expect((await send([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 0)).emitted).toBe(10);
      expect((await send([5, 6, 10, 11], 1)).emitted).toBe(2);

      const started = await call("PATCH", `/v1/streams/${stream}`, { partitions: 5 });
      expect(started.status).toBe(202);
      expect(await started.json()).toMatchObject({ from: 3, to: 5, state: "moving" });
      expect((await call("PATCH", `/v1/streams/${stream}`, { partitions: 6 })).status).toBe(409);
      // During the move: repeats of keys the old partitions hold are dropped (read through), new ids kept.
      expect(await send([0, 1, 2, 12, 13], 2)).toMatchObject({ emitted: 2, duplicates: 3 });
      if (stateKeys === "hashed") {
        // Hashed keys can't be routed anew: the old partitions are read through until their keys expire. An event 3 hours on expires them all.
        const during = await json(call("GET", `/v1/streams/${stream}`));
        expect(during.rescale).toMatchObject({ keysMoved: 0, oldPartitionsLeft: 3 });
        await runDurableObjectAlarm(env.COORDINATOR.getByName(stream));
        expect((await json(call("GET", `/v1/streams/${stream}`))).rescale).toMatchObject({ oldPartitionsLeft: 3 });
        expect((await send([99], 200)).emitted).toBe(1);
        const d = await moveUntilDone(stream);
        expect(d.config.partitions).toBe(5);
        expect(d.state.rows).toBe(1);
        expect((await send([0, 1], 201)).emitted).toBe(2); // expired: kept anew
        return;
      }
      const d = await moveUntilDone(stream);
      expect(d.config.partitions).toBe(5);
      expect(d.state.rows).toBe(sent.size);
      // After it: the new partitions alone.
      expect(await send([3, 4, 13, 14], 3)).toMatchObject({ emitted: 1, duplicates: 3 });
      const ids = (await output(stream)).map((r) => Number(r.id.slice(4))).sort((a, b) => a - b);
      expect(ids).toEqual([...sent].sort((a, b) => a - b));
      for (const i of [0, 7, 11, 14]) {
        const found = await json(call("GET", `/v1/streams/${stream}/state?row=${encodeURIComponent(JSON.stringify({ id: `evt-${i}`, ts: at(10, 0) }))}`));
        expect(found.keys, `evt-${i}`).toHaveLength(1);
      }
      // The old partitions were dropped: they hold nothing.
      const old = await env.PARTITION.getByName(`${stream}/0`).describe(d.epoch);
      expect(old.rows).toBe(0);
    });
  }

  it("refuses a bad target and the same count; a stream of several shards, fewer of them taking batches, is rescaled (shards-rescale.test.ts)", async () => {
    await createStream("rescale-refusals", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 });
    expect((await call("PATCH", "/v1/streams/rescale-refusals", { partitions: 0 })).status).toBe(400);
    expect((await call("PATCH", "/v1/streams/rescale-refusals", { partitions: 2 })).status).toBe(400);
    expect((await call("PATCH", "/v1/streams/rescale-refusals", { replicas: 2 })).status).toBe(400);
    expect((await call("PATCH", "/v1/streams/no-such-stream", { partitions: 3 })).status).toBe(404);
    await createStream("rescale-sharded", { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2, shards: 2 });
    // Fewer shards (src/coordinator/shard-count.ts): both kept, one taking batches; the partitions are then rescaled as with any count.
    expect(await json(call("PATCH", "/v1/streams/rescale-sharded", { shards: 1 }))).toEqual({ shards: { from: 2, to: 1 }, state: "done" });
    expect((await call("PATCH", "/v1/streams/rescale-sharded", { partitions: 3 })).status).toBe(202);
  });
});

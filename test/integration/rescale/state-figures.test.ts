/**
 * state.rows during an online rescale: each remembered key counted once,
 * though a key read through is in its old partition and its new one, and a
 * page handed out is in both until its bucket is forgotten where it was
 * (src/rescale/state-figures.ts). Checked after every step of the move and
 * every batch, against the distinct ids sent (nothing expires there), and,
 * with keys expiring, against every key the partitions list.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { coordinatorStub, partitionStub } from "../../../src/env";
import { at, call, createStream, json, post } from "../helpers";

const rowsOf = (ids: number[], minute: number) => ids.map((i) => ({ id: `evt-${i}`, ts: at(10, minute) }));
const stateRows = async (stream: string): Promise<number> => (await json(call("GET", `/v1/streams/${stream}`))).state.rows;

/** Every key the stream's partitions list, the new map's and the undrained old ones' (a key in both once). */
async function listed(stream: string): Promise<Set<string>> {
  const where = (await coordinatorStub(env, stream).locate())!;
  const holders = Array.from({ length: where.partitions }, (_, q) => partitionStub(env, stream, q, where.mapVersion));
  if (where.rescale) for (const [p, c] of where.rescale.cursors.entries()) if (!c.done) holders.push(partitionStub(env, stream, p, where.rescale.from.version));
  const keys = new Set<string>();
  for (const h of holders)
    for (let after = ""; ; ) {
      const page = await h.list(where.epoch, after, 1000);
      for (const e of page) keys.add(e.key);
      if (page.length < 1000) break;
      after = page[page.length - 1].key;
    }
  return keys;
}

/** The list of streams and /metrics show `rows` for the stream. */
async function listAndMetricsSay(stream: string, rows: number): Promise<void> {
  const page = await json(call("GET", `/v1/streams?after=${stream.slice(0, -1)}`));
  expect(page.streams.find((x: { name: string }) => x.name === stream)?.state.rows, "the list of streams").toBe(rows);
  const metrics = await (await call("GET", "/metrics")).text();
  expect(metrics, "/metrics").toContain(`edge_dedup_state_rows{stream="${stream}"} ${rows}\n`);
}

let n = 0;

describe("state.rows during a rescale", () => {
  it("counts each id once after every move step and every batch, repeats of keys not moved yet among them (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("text" as const, "hashed" as const),
        // Splits and merges.
        fc.tuple(fc.constantFrom(2, 3, 5), fc.constantFrom(1, 2, 4, 7)).filter(([a, b]) => a !== b),
        fc.integer({ min: 300, max: 1500 }),
        fc.array(fc.oneof(fc.constant("step" as const), fc.record({ fresh: fc.nat(20), repeats: fc.array(fc.nat(1499), { maxLength: 30 }) })), {
          minLength: 4,
          maxLength: 12,
        }),
        async (stateKeys, [from, to], filled, ops) => {
          const stream = `sf-${n++}`;
          await createStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: from, stateKeys });
          const ids = Array.from({ length: filled }, (_, i) => i);
          // Two minutes of keys: more than one bucket, most of them more than a page (250 keys) at an old partition.
          for (let m = 0; m < 2; m++)
            await post(
              stream,
              rowsOf(
                ids.filter((i) => i % 2 === m),
                m,
              ),
            );
          const sent = new Set(ids);
          expect((await call("PATCH", `/v1/streams/${stream}`, { partitions: to })).status).toBe(202);
          const coordinator = env.COORDINATOR.getByName(stream);
          let next = filled;
          for (const op of ops) {
            if (op === "step") await runDurableObjectAlarm(coordinator);
            else {
              const batch = [...op.repeats.filter((i) => i < filled), ...Array.from({ length: op.fresh }, () => next++)];
              if (batch.length === 0) continue;
              await post(stream, rowsOf(batch, 2));
              for (const i of batch) sent.add(i);
            }
            expect(await stateRows(stream), `after ${JSON.stringify(op)}`).toBe(sent.size);
          }
          // The list of streams and /metrics ask the partitions too while the move runs, and read the figures the move's end left.
          await listAndMetricsSay(stream, sent.size);
          for (let k = 0; k < 100 && stateKeys === "text" && (await json(call("GET", `/v1/streams/${stream}`))).rescale; k++)
            await runDurableObjectAlarm(coordinator);
          expect(await stateRows(stream)).toBe(sent.size);
          await listAndMetricsSay(stream, sent.size);
          // The move's end forgot what was read through, as such (src/partition/inherited-marks.ts): no row is left behind.
          // (Hashed keys are read through until they expire, which these never do here: that move goes on.)
          const where = (await coordinatorStub(env, stream).locate())!;
          expect(where.rescale === null).toBe(stateKeys === "text");
          for (let q = 0; q < (where.rescale ? 0 : to); q++) {
            const marks = await runInDurableObject(
              partitionStub(env, stream, q, where.mapVersion),
              (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM inherited").one().n,
            );
            expect(marks, `partition ${q}`).toBe(0);
          }
        },
      ),
      { numRuns: 10 },
    );
  }, 240_000);

  it("a GET that comes while a move step runs waits for it: the count is never read half way through a step", async () => {
    const stream = "sf-during-step";
    await createStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 });
    const ids = Array.from({ length: 1500 }, (_, i) => i);
    await post(stream, rowsOf(ids, 0));
    expect((await call("PATCH", `/v1/streams/${stream}`, { partitions: 3 })).status).toBe(202);
    const coordinator = env.COORDINATOR.getByName(stream);
    for (let step = 0; step < 8; step++) {
      const [, rows] = await Promise.all([runDurableObjectAlarm(coordinator), stateRows(stream)]);
      expect(rows, `step ${step}`).toBe(ids.length);
    }
  });

  it("a bucket handed out part way while the watermark is inside it: its dead keys up to the page count nowhere", async () => {
    const stream = "sf-front";
    // Delay 1 h: buckets of 7.5 min of expiry. 600 keys over minutes 0..7 are one bucket, more than two pages.
    await createStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 1 });
    const ids = Array.from({ length: 600 }, (_, i) => i);
    for (let m = 0; m < 8; m++)
      await post(
        stream,
        rowsOf(
          ids.filter((i) => i % 8 === m),
          m,
        ),
      );
    expect((await call("PATCH", `/v1/streams/${stream}`, { partitions: 2 })).status).toBe(202);
    await post(stream, rowsOf([9000], 123)); // the watermark at minute 63: the keys of minutes 0..3 expire, those of 4..7 stay
    const coordinator = env.COORDINATOR.getByName(stream);
    for (let step = 0; step < 4; step++) {
      await runDurableObjectAlarm(coordinator); // the hand-out evicts first, then a page of the live keys
      const keys = await listed(stream);
      expect(keys.size, `step ${step}`).toBe(300 + 1);
      expect(await stateRows(stream), `step ${step}`).toBe(keys.size);
    }
  });

  it("with keys expiring during the move: once every partition is at the stream's watermark, the count is what they list", async () => {
    const stream = "sf-expiring";
    await createStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 });
    const early = Array.from({ length: 600 }, (_, i) => i);
    const late = Array.from({ length: 600 }, (_, i) => 1000 + i);
    await post(stream, rowsOf(early, 0));
    await post(stream, rowsOf(late, 40));
    expect((await call("PATCH", `/v1/streams/${stream}`, { partitions: 4 })).status).toBe(202);
    const coordinator = env.COORDINATOR.getByName(stream);
    await runDurableObjectAlarm(coordinator); // a page of the early bucket handed out by each old partition
    // Repeats read through, of both minutes; then an event 2 h 10 min on: the early keys expire, the late ones stay.
    await post(stream, rowsOf([1, 2, 599, 1001, 1002, 1599, 5000], 50));
    await post(stream, rowsOf([7000], 130));
    // The old partitions evict first (as a move step does): a key read through is then counted where it is still alive.
    const where = (await coordinatorStub(env, stream).locate())!;
    const { watermark } = await json(call("GET", `/v1/streams/${stream}`));
    for (let p = 0; p < 2; p++) await partitionStub(env, stream, p, where.rescale!.from.version).advance(where.epoch, watermark);
    expect(await stateRows(stream), "old partitions evicted, new ones not yet").toBe((await listed(stream)).size);
    const all = async () => {
      const where = (await coordinatorStub(env, stream).locate())!;
      const d = await json(call("GET", `/v1/streams/${stream}`));
      const holders = Array.from({ length: 4 }, (_, q) => partitionStub(env, stream, q, where.mapVersion));
      if (where.rescale) for (let p = 0; p < 2; p++) holders.push(partitionStub(env, stream, p, where.rescale.from.version));
      for (const h of holders) await h.advance(where.epoch, d.watermark);
      return { rows: await stateRows(stream), keys: await listed(stream), moving: !!where.rescale };
    };
    for (let step = 0; ; step++) {
      // Right after a step (which evicts at the old partitions what expired at the stream's watermark), before the new ones all evict: what each lists.
      if (step > 0) expect(await stateRows(stream), `step ${step}, as each partition stands`).toBe((await listed(stream)).size);
      const { rows, keys, moving } = await all();
      expect(rows, `step ${step}`).toBe(keys.size);
      expect(keys.size, `step ${step}`).toBe(late.length + 2); // 5000 (minute 50) and 7000 stay; every early key expired
      if (!moving) break;
      await post(stream, rowsOf([1003 + step], 50)); // a repeat read through each step, until its key has moved
      await runDurableObjectAlarm(coordinator);
      expect(step).toBeLessThan(100);
    }
  });
});

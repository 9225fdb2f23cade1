import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { call, createStream, json, post, D, until } from "../helpers";
import { deadLaneSchema, destinationSchema } from "../../../src/delivery/schemas";

/**
 * DELETE /v1/streams/{stream} takes its destinations with it (their pending
 * rows, dead lanes and secrets), and a stream created again under the same
 * name never reuses a webhook-id: its ids carry the name's incarnation
 * (`{stream}~{n}.{seq}.{index}`), which the Registry keeps across deletes.
 * The queue consumer (test/support/delivery-helper-worker.js) keeps each
 * message by id with how many times that id arrived, as an idempotent
 * handler would: a reused id would show as a second arrival.
 */
const helper = (env as unknown as { DELIVERY_HELPER: Fetcher }).DELIVERY_HELPER;
const T = Date.UTC(2026, 0, 1);
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2 };

const received = async (prefix: string) => await (await helper.fetch(`http://helper/received?prefix=${encodeURIComponent(prefix)}`)).json<any[]>();

/** What a Destination object holds, all tables. */
async function stored(name: string): Promise<Record<string, number>> {
  return runInDurableObject(env.DESTINATION.getByName(name), (_o, state) =>
    Object.fromEntries(
      ["dest", "pending", "dead", "marks", "members"].map((t) => [t, state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${t}`).one().n]),
    ),
  );
}

/** One incarnation: a queue and an http destination (nobody answers it: its rows die), the same two batches each time. */
async function incarnation(stream: string) {
  await createStream(stream, base);
  expect((await call("PUT", D(stream, "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
  expect((await call("PUT", D(stream, "h"), { type: "http", url: "http://127.0.0.1:1/hook", retryFor: "1 second", timeout: "1 second" })).status).toBe(201);
  expect(
    (
      await post(
        stream,
        [
          { id: 1, ts: T },
          { id: 2, ts: T },
        ],
        { "idempotency-key": "b1" },
      )
    ).emitted,
  ).toBe(2);
  expect((await post(stream, [{ id: 3, ts: T }], { "idempotency-key": "b2" })).emitted).toBe(1);
  const dead = await until("the http destination's dead lane", async () => {
    const page = deadLaneSchema.parse(await json(call("GET", `${D(stream, "h")}/dead`)));
    return page.rows.length === 3 ? page : null;
  });
  return dead.rows.map((r) => r.id);
}

it("deleting a stream deletes its destinations; a re-created stream's ids are new, also after a restart", async () => {
  const s = "del-dest";
  const firstDead = await incarnation(s);
  expect(firstDead).toEqual([`${s}.1.0`, `${s}.1.1`, `${s}.2.0`]);
  const first = await until("the first incarnation's messages", async () => ((await received(`${s}.`)).length === 3 ? received(`${s}.`) : null));
  expect(first.map((m) => m.body.id).sort()).toEqual([`${s}.1.0`, `${s}.1.1`, `${s}.2.0`]);
  expect((await stored(`${s}/h`)).dead).toBe(3);

  expect((await call("DELETE", `/v1/streams/${s}`)).status).toBe(204);
  // Gone with the stream: no destination, no dead lane, nothing stored (secrets, pending rows, marks), not listed.
  expect((await call("GET", D(s, "h"))).status).toBe(404);
  expect((await call("GET", `${D(s, "h")}/dead`)).status).toBe(404);
  expect((await call("GET", D(s, "q"))).status).toBe(404);
  expect((await json(call("GET", `/v1/streams/${s}/destinations`))).destinations).toEqual([]);
  for (const name of [`${s}/h`, `${s}/q`]) expect(await stored(name), name).toEqual({ dest: 0, pending: 0, dead: 0, marks: 0, members: 0 });
  expect((await stored(s)).members).toBe(0);

  // The same name, the same batches: new ids, none the first incarnation's.
  const secondDead = await incarnation(s);
  expect(secondDead).toEqual([`${s}~2.1.0`, `${s}~2.1.1`, `${s}~2.2.0`]);
  const second = await until("the second incarnation's messages", async () => ((await received(`${s}~2.`)).length === 3 ? received(`${s}~2.`) : null));
  expect(second.map((m) => m.body.id).sort()).toEqual([`${s}~2.1.0`, `${s}~2.1.1`, `${s}~2.2.0`]);
  for (const m of second) expect(m.body).toMatchObject({ stream: s, seq: expect.any(Number), index: expect.any(Number) });
  // Every id arrived once: an idempotent consumer dropped nothing new.
  expect([...(await received(`${s}.`)), ...(await received(`${s}~`))].map((m) => m.arrivals)).toEqual([1, 1, 1, 1, 1, 1]);

  // Stable across a restart of the objects: the incarnation is stored, not remembered in memory.
  await evictDurableObject(env.COORDINATOR.getByName(s));
  await evictDurableObject(env.DESTINATION.getByName(`${s}/q`));
  await evictDurableObject(env.REGISTRY.getByName("registry"));
  expect((await post(s, [{ id: 4, ts: T }], { "idempotency-key": "b3" })).emitted).toBe(1);
  const later = await until("the message after the restart", async () => ((await received(`${s}~2.3.`)).length === 1 ? received(`${s}~2.3.`) : null));
  expect(later[0].body).toMatchObject({ id: `${s}~2.3.0`, seq: 3, index: 0, row: { id: 4, ts: T } });
  // Replay by seq still works on the new ids.
  expect((await call("POST", `${D(s, "h")}/replay`, { fromSeq: 1 })).status).toBe(202);
  const back = await until("the replayed rows in the dead lane", async () => {
    const page = deadLaneSchema.parse(await json(call("GET", `${D(s, "h")}/dead`)));
    return page.rows.length === 4 && destinationSchema.parse(await json(call("GET", D(s, "h")))).pending === 0 ? page : null;
  });
  expect(back.rows.map((r) => r.id)).toEqual([`${s}~2.1.0`, `${s}~2.1.1`, `${s}~2.2.0`, `${s}~2.3.0`]);

  // A third time: the count goes on.
  expect((await call("DELETE", `/v1/streams/${s}`)).status).toBe(204);
  expect(await incarnation(s)).toEqual([`${s}~3.1.0`, `${s}~3.1.1`, `${s}~3.2.0`]);
});

it("a stream created before incarnations were counted (a Registry without a record of it) still gets new ids after its delete", async () => {
  const s = "del-legacy";
  await createStream(s, base);
  // As storage from before: the Registry never counted this name, the stream's meta says 1 (the migration's default).
  await runInDurableObject(env.REGISTRY.getByName("registry"), (_o, state) => state.storage.sql.exec("DELETE FROM incarnations WHERE name = ?", s));
  expect((await call("DELETE", `/v1/streams/${s}`)).status).toBe(204);
  await createStream(s, base);
  expect((await call("PUT", D(s, "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
  await post(s, [{ id: 1, ts: T }], { "idempotency-key": "l1" });
  const got = await until("the message", async () => ((await received(`${s}~`)).length === 1 ? received(`${s}~`) : null));
  expect(got[0].body.id).toBe(`${s}~2.1.0`);
  expect(await received(`${s}.`)).toEqual([]);
});

it("a destination that outlived its stream's delete (as before destinations went with it) sends the re-created stream's rows under new ids", async () => {
  const s = "del-survivor";
  await createStream(s, base);
  expect((await call("PUT", D(s, "q"), { type: "queue", binding: "DELIVERIES" })).status).toBe(201);
  await post(s, [{ id: 1, ts: T }], { "idempotency-key": "v1" });
  await until("the first message", async () => ((await received(`${s}.1.`)).length === 1 ? true : null));
  // As an old release deleted streams: the destination is not touched, and no incarnation was ever counted.
  await runInDurableObject(env.DESTINATION.getByName(s), (_o, state) => state.storage.sql.exec("DELETE FROM members"));
  expect((await call("DELETE", `/v1/streams/${s}`)).status).toBe(204);
  await runInDurableObject(env.REGISTRY.getByName("registry"), (_o, state) => state.storage.sql.exec("DELETE FROM incarnations WHERE name = ?", s));
  await createStream(s, base);
  await runInDurableObject(env.DESTINATION.getByName(s), (_o, state) => state.storage.sql.exec("INSERT INTO members (name) VALUES ('q')"));
  await post(s, [{ id: 2, ts: T }], { "idempotency-key": "v1" });
  const got = await until("the re-created stream's message", async () => ((await received(`${s}~`)).length === 1 ? received(`${s}~`) : null));
  expect(got[0].body).toMatchObject({ id: `${s}~2.1.0`, row: { id: 2, ts: T } });
  expect((await received(`${s}.`)).map((m) => [m.body.id, m.arrivals])).toEqual([[`${s}.1.0`, 1]]);
});

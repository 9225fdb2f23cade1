/**
 * The SQLite Durable Objects keep their storage one way (src/storage/sqlite-object.ts):
 * versioned migrations run on first use, and objects with a `createdWith`
 * table leave no storage behind until they are set up. The Runner, the
 * Registry and the Destination took that up later: storage they wrote before
 * (no recorded version) stays readable and records the version it reached.
 */
import { runnerV1 } from "../runner-v1";
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { REGISTRY_MIGRATIONS } from "../../../src/registry/registry";
import { RUNNER_MIGRATIONS } from "../../../src/sources/files/runner";
import { DESTINATION_MIGRATIONS } from "../../../src/delivery/destination";
import { DESTINATION_TABLES } from "../../../src/delivery/store";

const latest = (ms: readonly { version: number }[]) => Math.max(...ms.map((m) => m.version));

/** The object's own tables, and the version its storage records (null: no _schema table). */
function stored(state: DurableObjectState): { tables: string[]; version: number | null } {
  const names = state.storage.sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .toArray()
    .map((t) => t.name);
  const version = names.includes("_schema") ? state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version : null;
  return { tables: names.filter((n) => !n.startsWith("_") && !n.startsWith("sqlite")), version };
}

it("a Registry written before versions keeps its streams and records version 1", async () => {
  const stub = env.REGISTRY.getByName("registry-before-versions");
  await runInDurableObject(stub, async (_r, state) => {
    await state.storage.deleteAll();
    state.storage.sql.exec(`
      CREATE TABLE streams (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO streams VALUES ('a', 1), ('b', 2);
    `);
  });
  await evictDurableObject(stub);
  expect(await stub.list("", 10)).toEqual([
    { name: "a", registeredAt: 1 },
    { name: "b", registeredAt: 2 },
  ]);
  await stub.add("c");
  expect((await stub.list("b", 10)).map((s) => s.name)).toEqual(["c"]);
  expect(await runInDurableObject(stub, (_r, state) => stored(state))).toEqual({ tables: ["streams"], version: latest(REGISTRY_MIGRATIONS) });
});

it("a Runner leaves no storage until a run or a record exists, then records its latest version", async () => {
  const stub = env.RUNNER.getByName("runner-never-set-up");
  expect(await stub.view("run_made_up")).toBeNull();
  expect(await runInDurableObject(stub, (_r, state) => stored(state))).toEqual({ tables: [], version: null });
  // The first version's tables (before run options and publication), without a recorded version.
  await runInDurableObject(stub, (_r, state) => {
    state.storage.sql.exec(runnerV1("runner-never-set-up", "in/x/"));
  });
  await evictDurableObject(stub);
  expect(await stub.view("run_old")).toMatchObject({ id: "run_old", status: "done", options: {}, publication: null });
  const after = await runInDurableObject(stub, (_r, state) => ({
    ...stored(state),
    columns: state.storage.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('runs')")
      .toArray()
      .map((c) => c.name),
  }));
  expect(after).toMatchObject({ tables: ["done_files", "meta", "run_files", "runs"], version: latest(RUNNER_MIGRATIONS) });
  expect(after.columns).toEqual(expect.arrayContaining(["options", "publication"]));
});

it("a Destination index written before versions keeps its members and records version 1", async () => {
  const stub = env.DESTINATION.getByName("dest-before-versions");
  await runInDurableObject(stub, async (_d, state) => {
    await state.storage.deleteAll();
    state.storage.sql.exec(DESTINATION_TABLES + "INSERT INTO members (name) VALUES ('hook'), ('queue');");
  });
  await evictDurableObject(stub);
  expect(await stub.members()).toEqual(["hook", "queue"]);
  expect((await runInDurableObject(stub, (_d, state) => stored(state))).version).toBe(latest(DESTINATION_MIGRATIONS));
});

it("a Destination written before lanes (version 2) keeps its pending and dead rows, places them on lanes, and lists their attempts", async () => {
  const stub = env.DESTINATION.getByName("stream-v2/hook");
  await runInDurableObject(stub, async (_d, state) => {
    await state.storage.deleteAll();
    const config = JSON.stringify({ type: "queue", binding: "DELIVERIES", retryForMs: 60_000 }); // as version 2 stored it: no lanes, order or cap
    state.storage.sql.exec(
      DESTINATION_TABLES +
        `ALTER TABLE dest ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE _schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
        INSERT INTO _schema VALUES (1, 2);
        INSERT INTO dest (id, stream, name, config, secrets, created_at, epoch, read_seq, read_index, paused)
          VALUES (1, 'stream-v2', 'hook', '${config}', '[]', 1, 'e1', 3, 0, 'paused by the test');
        INSERT INTO pending (seq, idx, row, committed_at, attempts, first_at, next_at, last_error) VALUES
          (2, 0, '{"id":1}', 10, 2, 11, 99, 'HTTP 500'), (2, 1, '{"id":2}', 10, 0, NULL, 50, NULL), (3, 0, '{"id":3}', 20, 0, NULL, 50, NULL);
        INSERT INTO dead (seq, idx, row, committed_at, attempts, last_error, died_at) VALUES (1, 0, '{"id":0}', 5, 9, 'HTTP 500', 7);`,
    );
  });
  await evictDurableObject(stub);
  const status = (await stub.status())!;
  expect(status).toMatchObject({ lanes: 16, ordering: "none", maxPerSecond: null, pending: 3, dead: 1, deliveredSeq: 1 });
  expect(status.laneStatus).toHaveLength(16);
  expect(status.laneStatus.reduce((n, l) => n + l.pending, 0)).toBe(3);
  // Placed as an unordered destination places a row it reads: by its place in the output.
  const placed = await runInDurableObject(stub, (_d, state) =>
    state.storage.sql
      .exec<{ seq: number; idx: number; entity: string | null; h: number }>("SELECT seq, idx, entity, h FROM pending ORDER BY seq, idx")
      .toArray(),
  );
  const { placementOf } = await import("../../../src/delivery/ordering");
  const unordered = (seq: number, idx: number) => ({ seq, idx, entity: null, h: placementOf(null, seq, idx, "none").h });
  expect(placed).toEqual([unordered(2, 0), unordered(2, 1), unordered(3, 0)]);
  const [pending] = (await stub.attempts({ seq: 2, index: 0 }))!;
  expect(pending).toMatchObject({ id: "stream-v2.2.0", state: "pending", attempts: [], nextAt: 99 });
  const [dead] = (await stub.attempts({ seq: 1, index: 0 }))!;
  expect(dead).toMatchObject({ id: "stream-v2.1.0", state: "dead", attempts: [], at: 7 });
  expect(await stub.attempts({ seq: 9, index: 0 })).toEqual([]);
  expect((await stub.attempts({ limit: 10 }))!.map((r) => [r.id, r.state])).toEqual([
    ["stream-v2.2.0", "pending"],
    ["stream-v2.1.0", "dead"],
  ]);
  expect(await env.DESTINATION.getByName("stream-v2/none").attempts({ limit: 10 })).toBeNull();
  expect((await stub.dead({ seq: 0, index: -1 }, 10))[0]).toMatchObject({ id: "stream-v2.1.0", attempts: 9, history: [] });
  expect((await runInDurableObject(stub, (_d, state) => stored(state))).version).toBe(latest(DESTINATION_MIGRATIONS));
});

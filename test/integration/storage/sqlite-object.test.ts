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

/**
 * Stored state is versioned (src/storage/migrations.ts): a Partition or a
 * Coordinator whose storage was written by the previous layout (no recorded
 * version) is brought up to date on first use and goes on with what it held.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { COORDINATOR_MIGRATIONS } from "../../src/coordinator";
import { PARTITION_MIGRATIONS, type Partition } from "../../src/partition";
import type { DedupSettings } from "../../src/stream/dedup";
import { at, call, json, post } from "./helpers";

const within: DedupSettings = { mode: "within-watermark", delay: 100, hasEventTime: true };

it("a partition written by the previous layout is migrated on first use and keeps its keys", async () => {
  const stub = env.PARTITION.getByName("versions/0") as DurableObjectStub<Partition>;
  // Storage as the release before versions wrote it.
  await runInDurableObject(stub, async (_p, state) => {
    await state.storage.deleteAll();
    state.storage.sql.exec(`
      CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, watermark INTEGER NOT NULL, rows INTEGER NOT NULL);
      CREATE TABLE keys (k TEXT PRIMARY KEY, t INTEGER, expires INTEGER) WITHOUT ROWID;
      CREATE INDEX keys_by_expiry ON keys (expires) WHERE expires IS NOT NULL;
      CREATE TABLE ledger (batch TEXT PRIMARY KEY, at INTEGER NOT NULL, decisions TEXT NOT NULL) WITHOUT ROWID;
      INSERT INTO meta (id, epoch, watermark, rows) VALUES (1, 'e1', 0, 2);
      INSERT INTO keys (k, t, expires) VALUES ('A', 1000, 1100), ('B', 1050, 1150);
    `);
  });
  await evictDurableObject(stub); // the next call constructs it again, on that storage
  const r = await stub.apply({ epoch: "e1", batch: "s\nb1", watermark: 0, settings: within, rows: [{ index: 0, key: "A", eventTime: 1010 }, { index: 1, key: "C", eventTime: 1020 }] });
  expect(r).toMatchObject({ decisions: "de", rows: 3, nextExpiry: 1100 });
  const after = await runInDurableObject(stub, (_p, state) => ({
    version: state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
    columns: state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray().map((c) => c.name),
  }));
  expect(after.version).toBe(Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)));
  expect(after.columns).toContain("next_expiry");
  // Eviction works from the migrated figures: A (1100) and B (1150) go at 1150, C (1120) too.
  expect(await stub.advance("e1", 1150)).toMatchObject({ removed: 3, rows: 0, nextExpiry: null });
});

it("a stream written by the previous layout is migrated on first use: its ledger replays, new batches go on", async () => {
  const stub = env.COORDINATOR.getByName("versions-stream");
  const config = { key: ["id"], eventTime: "ts", mode: "within-watermark", watermarkDelay: 300_000, partitions: 2, watermarkPolicy: "min",
    schema: {}, sources: {}, maxEventTimeSkew: 86_400_000, limits: { maxBodyBytes: 10_485_760, maxRows: 10_000 } };
  const outcome = { batchId: "old-1", source: "default", replayed: false, watermark: 0, watermarkAfter: 0, input: 1, emitted: 0, duplicates: 1, late: 0, rejected: [] };
  await runInDurableObject(stub, async (_c, state) => {
    await state.storage.deleteAll();
    // The first layout, as a release before versions wrote it: no outbox, no partitions.next_expiry, no _schema.
    state.storage.sql.exec(`
      CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, config TEXT NOT NULL,
        config_version INTEGER NOT NULL, epoch TEXT NOT NULL, created_at INTEGER NOT NULL, watermark INTEGER NOT NULL);
      CREATE TABLE configs (version INTEGER PRIMARY KEY, config TEXT NOT NULL);
      CREATE TABLE sources (name TEXT PRIMARY KEY, max_t INTEGER, last_batch_at INTEGER) WITHOUT ROWID;
      CREATE TABLE batches (source TEXT NOT NULL, batch_id TEXT NOT NULL, body_hash TEXT NOT NULL,
        watermark INTEGER NOT NULL, begun_at INTEGER NOT NULL, config_version INTEGER NOT NULL, seq INTEGER, data_key TEXT, late_key TEXT, rejected_key TEXT, report TEXT,
        PRIMARY KEY (source, batch_id)) WITHOUT ROWID;
      CREATE UNIQUE INDEX batches_by_seq ON batches (seq) WHERE seq IS NOT NULL;
      CREATE TABLE partitions (p INTEGER PRIMARY KEY, rows INTEGER NOT NULL, bytes INTEGER NOT NULL, watermark INTEGER NOT NULL);
      CREATE TABLE credentials (id TEXT PRIMARY KEY, source TEXT NOT NULL, type TEXT NOT NULL, label TEXT, created_at INTEGER NOT NULL, material TEXT NOT NULL) WITHOUT ROWID;
      CREATE INDEX credentials_by_material ON credentials (material);
    `);
    state.storage.sql.exec("INSERT INTO meta VALUES (1, 'versions-stream', ?, 1, 'ep1', 1, 0)", JSON.stringify(config));
    state.storage.sql.exec("INSERT INTO configs VALUES (1, ?)", JSON.stringify(config));
    state.storage.sql.exec("INSERT INTO partitions VALUES (0, 1, 4096, 0)");
    // A committed batch of the old layout (its output objects don't matter here: it emitted nothing).
    const hash = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode('[{"id":"A","ts":1704103200000}]'))),
      (b) => b.toString(16).padStart(2, "0")).join("");
    state.storage.sql.exec(
      "INSERT INTO batches (source, batch_id, body_hash, watermark, begun_at, config_version, seq, report) VALUES ('default', 'old-1', ?, 0, 1, 1, 1, ?)",
      hash, JSON.stringify({ outcome, progress: {} }),
    );
  });
  await evictDurableObject(stub);
  const replay = await call("POST", "/v1/streams/versions-stream/events", '[{"id":"A","ts":1704103200000}]', { "idempotency-key": "old-1", "content-type": "application/json" });
  expect(await replay.json()).toEqual({ ...outcome, replayed: true });
  expect(await post("versions-stream", { id: "B", ts: at(10, 0) })).toMatchObject({ emitted: 1 });
  expect((await (await call("GET", "/v1/streams/versions-stream/output")).text()).trim()).toBe(JSON.stringify({ id: "B", ts: at(10, 0) }));
  const version = await runInDurableObject(stub, (_c, state) => state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version);
  expect(version).toBe(Math.max(...COORDINATOR_MIGRATIONS.map((m) => m.version)));
  // Version 4's advice table: the delay advisor counts from the first batch after the upgrade.
  expect(await json(call("GET", "/v1/streams/versions-stream/advice"))).toMatchObject({ overall: { rows: 1, duplicates: 0 } });
});

/**
 * Stored state is versioned (src/storage/migrations.ts): a Partition whose
 * storage was written by the previous layout (no recorded version, no
 * next_expiry) is brought up to date on first use and keeps deciding
 * correctly with the keys it already held.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { PARTITION_MIGRATIONS, type Partition } from "../../src/partition";
import type { DedupSettings } from "../../src/stream/dedup";

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

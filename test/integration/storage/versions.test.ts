/**
 * Stored state is versioned (src/storage/migrations.ts): a Partition or a
 * Coordinator whose storage was written by the previous layout (no recorded
 * version) is brought up to date on first use and goes on with what it held.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { COORDINATOR_MIGRATIONS } from "../../../src/coordinator/migrations";
import { PARTITION_MIGRATIONS } from "../../../src/partition/migrations";
import type { Partition } from "../../../src/partition/partition";
import type { DedupSettings } from "../../../src/stream/dedup";
import { keyHash64, keyHashLabel } from "../../../src/stream/key-hash";
import { migrate } from "../../../src/storage/migrations";
import { applyOne, at, call, client, committedRecords, json, output, post } from "../helpers";

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
  const r = await applyOne(stub, {
    epoch: "e1",
    batch: "s\nb1",
    watermark: 0,
    settings: within,
    rows: [
      { index: 0, key: "A", eventTime: 1010 },
      { index: 1, key: "C", eventTime: 1020 },
    ],
  });
  expect(r).toMatchObject({ decisions: "de", rows: 3, nextExpiry: 1100 });
  const after = await runInDurableObject(stub, (_p, state) => ({
    version: state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
    columns: state.storage.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')")
      .toArray()
      .map((c) => c.name),
  }));
  expect(after.version).toBe(Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)));
  expect(after.columns).toContain("next_expiry");
  // Eviction works from the migrated figures: A (1100) and B (1150) go at 1150, C (1120) too.
  expect(await stub.advance("e1", 1150)).toMatchObject({ removed: 3, rows: 0, nextExpiry: null });
});

it("a stream written by the previous layout is migrated on first use: its ledger replays, new batches go on", async () => {
  const stub = env.COORDINATOR.getByName("versions-stream");
  const config = {
    key: ["id"],
    eventTime: "ts",
    mode: "within-watermark",
    watermarkDelay: 300_000,
    partitions: 2,
    watermarkPolicy: "min",
    schema: {},
    sources: {},
    maxEventTimeSkew: 86_400_000,
    limits: { maxBodyBytes: 10_485_760, maxRows: 10_000 },
  };
  const outcome = {
    batchId: "old-1",
    source: "default",
    replayed: false,
    watermark: 0,
    watermarkAfter: 0,
    input: 1,
    emitted: 0,
    duplicates: 1,
    late: 0,
    rejected: [],
  };
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
    const hash = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode('[{"id":"A","ts":1704103200000}]'))), (b) =>
      b.toString(16).padStart(2, "0"),
    ).join("");
    state.storage.sql.exec(
      "INSERT INTO batches (source, batch_id, body_hash, watermark, begun_at, config_version, seq, report) VALUES ('default', 'old-1', ?, 0, 1, 1, 1, ?)",
      hash,
      JSON.stringify({ outcome, progress: {} }),
    );
  });
  await evictDurableObject(stub);
  const replay = await call("POST", "/v1/streams/versions-stream/events", '[{"id":"A","ts":1704103200000}]', {
    "idempotency-key": "old-1",
    "content-type": "application/json",
  });
  expect(await replay.json()).toEqual({ ...outcome, replayed: true });
  expect(await post("versions-stream", { id: "B", ts: at(10, 0) })).toMatchObject({ emitted: 1 });
  expect((await (await call("GET", "/v1/streams/versions-stream/output")).text()).trim()).toBe(JSON.stringify({ id: "B", ts: at(10, 0) }));
  const version = await runInDurableObject(stub, (_c, state) => state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version);
  expect(version).toBe(Math.max(...COORDINATOR_MIGRATIONS.map((m) => m.version)));
  // Version 4's advice table: the delay advisor counts from the first batch after the upgrade.
  expect(await json(call("GET", "/v1/streams/versions-stream/advice"))).toMatchObject({ overall: { rows: 1, duplicates: 0 } });
});

it("a stream written by the per-request ledger (version 4) upgrades in place: replays, progress, output, a begun batch resumes", async () => {
  const name = "versions-v4";
  await client.putStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 1 });
  const rows = [{ id: "A", ts: at(10, 0) }];
  const first = await post(name, rows, { "idempotency-key": "v4-1" });
  const stub = env.COORDINATOR.getByName(name);
  const epoch = (await json(call("GET", `/v1/streams/${name}`))).epoch as string;
  const hashOf = async (body: string) =>
    Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body))), (b) => b.toString(16).padStart(2, "0")).join("");
  // Rewrite its ledger as version 4 kept it: one row per batch id (this commit), plus a batch begun and never committed.
  const pending = [{ id: "P", ts: at(10, 1) }];
  await runInDurableObject(stub, async (c, state) => {
    await c.flush(); // the commit record leaves its outbox row for `groups`
    const sql = state.storage.sql;
    const [committed] = committedRecords(sql);
    const group = sql.exec<{ members: string; committed_at: number }>("SELECT members, committed_at FROM groups").one();
    const [, , data] = JSON.parse(group.members)[0] as [string, string, string | null];
    sql.exec(`DROP TABLE batches; DROP TABLE groups; DROP TABLE begun; DROP TABLE id_slices;
      CREATE TABLE batches (source TEXT NOT NULL, batch_id TEXT NOT NULL, body_hash TEXT NOT NULL,
        watermark INTEGER NOT NULL, begun_at INTEGER NOT NULL, config_version INTEGER NOT NULL, seq INTEGER, data_key TEXT, late_key TEXT,
        rejected_key TEXT, report TEXT, PRIMARY KEY (source, batch_id)) WITHOUT ROWID;
      CREATE UNIQUE INDEX batches_by_seq ON batches (seq) WHERE seq IS NOT NULL;
      UPDATE _schema SET version = 4;`);
    sql.exec(
      "INSERT INTO batches VALUES (?, ?, ?, 0, ?, 1, ?, ?, NULL, NULL, ?)",
      committed.source,
      committed.batch_id,
      committed.body_hash,
      group.committed_at,
      committed.seq,
      data,
      committed.report,
    );
    sql.exec(
      "INSERT INTO batches (source, batch_id, body_hash, watermark, begun_at, config_version) VALUES ('default', 'v4-2', ?, 0, ?, 1)",
      await hashOf(JSON.stringify(pending)),
      Date.now(),
    );
  });
  // Its partition's decision for the begun batch, in partition version 3's layout: P was judged emitted (and stored) before the crash.
  const partition = env.PARTITION.getByName(`${name}/0`);
  await runInDurableObject(partition, (p, state) => {
    // Version 3 kept a row per key (b and e absolute): A as the partition lists it, and P.
    const [a] = p.list(epoch, "", 10);
    const width = state.storage.sql.exec<{ width: number }>("SELECT width FROM meta").one().width;
    state.storage.sql.exec(`DELETE FROM ledger; DROP TABLE segments; ALTER TABLE meta DROP COLUMN pending; ALTER TABLE meta DROP COLUMN open;
      ALTER TABLE meta ADD COLUMN front_b INTEGER; UPDATE meta SET base = NULL, names = NULL; UPDATE _schema SET version = 3;
      CREATE TABLE keys (b INTEGER NOT NULL, k NOT NULL, t INTEGER, e INTEGER, PRIMARY KEY (b, k)) WITHOUT ROWID;
      CREATE TABLE front (e INTEGER NOT NULL, k NOT NULL, PRIMARY KEY (e, k)) WITHOUT ROWID;`);
    state.storage.sql.exec("INSERT INTO ledger (batch, at, decisions) VALUES (?, ?, '0e')", "default\nv4-2", Date.now());
    for (const [k, t, e] of [
      [a.key, a.eventTime, a.expiresAt!],
      ["P", at(10, 1), at(10, 6)],
    ] as const) {
      state.storage.sql.exec("INSERT INTO keys (b, k, t, e) VALUES (?, ?, ?, ?)", Math.floor(e / width), k, t, e);
    }
    state.storage.sql.exec("UPDATE meta SET rows = 2");
  });
  await evictDurableObject(stub);
  await evictDurableObject(partition);

  expect(await post(name, rows, { "idempotency-key": "v4-1" })).toEqual({ ...first, replayed: true });
  expect((await call("POST", `/v1/streams/${name}/events`, [{ id: "Z", ts: at(10, 0) }], { "idempotency-key": "v4-1" })).status).toBe(422);
  // The begun batch resumes: its recorded decision stands (P is emitted, not a duplicate of itself).
  expect(await post(name, pending, { "idempotency-key": "v4-2" })).toMatchObject({ replayed: false, emitted: 1, duplicates: 0 });
  expect(await post(name, [{ id: "B", ts: at(10, 2) }], { "idempotency-key": "v4-3" })).toMatchObject({ emitted: 1 });
  expect((await output(name)).map((r) => r.id)).toEqual(["A", "P", "B"]);
  const progress = (await json(call("GET", `/v1/streams/${name}/progress`))).progress;
  expect(progress.map((p: { batchId: string; commitSeq: number }) => [p.batchId, p.commitSeq])).toEqual([
    ["v4-1", 1],
    ["v4-2", 2],
    ["v4-3", 3],
  ]);
  const after = await runInDurableObject(stub, (_c, state) => ({
    version: state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
    begun: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM begun").one().n,
  }));
  expect(after).toEqual({ version: Math.max(...COORDINATOR_MIGRATIONS.map((m) => m.version)), begun: 0 });
  expect((await json(call("GET", `/v1/streams/${name}`))).bookkeeping).toMatchObject({ batchesRemembered: 3 });
  expect(epoch).toBeTruthy();
  // The counters of /metrics moved to one row (version 6) with what they held: A before the upgrade, P and B after.
  const metrics = await (await call("GET", "/metrics")).text();
  expect(metrics).toContain(`edge_dedup_rows_total{stream="${name}",source="default",outcome="emitted"} 3`);
  expect(metrics).toContain(`edge_dedup_batches_total{stream="${name}"} 3`);
});

/** Empties a partition's storage and lays it out as `version` did (its migrations only), for a test to fill as that release wrote it. */
async function layoutAt(stub: DurableObjectStub<Partition>, version: number, fill: (sql: SqlStorage) => void): Promise<void> {
  await runInDurableObject(stub, async (_p, state) => {
    await state.storage.deleteAll();
    migrate(
      state.storage.sql,
      PARTITION_MIGRATIONS.filter((m) => m.version <= version),
      (fn) => state.storage.transactionSync(fn),
    );
    fill(state.storage.sql);
  });
  await evictDurableObject(stub); // the next call constructs it again, on that storage
}

const schemaOf = (stub: DurableObjectStub<Partition>) =>
  runInDurableObject(stub, (_p, state) => ({
    version: state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
    receipts: state.storage.sql
      .exec<{ dropped: number; conflicts: number }>("SELECT dropped, conflicts FROM receipts")
      .toArray()
      .map((r) => [r.dropped, r.conflicts]),
    tables: state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'kept%' ORDER BY name")
      .toArray()
      .map((r) => r.name),
  }));

it("a hashed partition of version 5 (dropped counts in receipts rows) upgrades: the counts move into its keys' rows, unchanged", async () => {
  const stub = env.PARTITION.getByName("versions/5") as DurableObjectStub<Partition>;
  const hashed: DedupSettings = { ...within, delay: 3_600_000, hashedKeys: true };
  const t0 = 1_704_103_200_000;
  const width = 900_000;
  const row = (index: number, key: string, digest: string) => ({ index, key, eventTime: t0 + index, digest });
  // As version 5 wrote b1 = [A, B, C] then b2 = [A, A, B, B'] (B' another content): b and e absolute, t the batch's number, every count in a receipts row.
  await layoutAt(stub, 5, (sql) => {
    sql.exec(
      "INSERT INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, front_b, pending) VALUES (1, 'e1', 0, 3, ?, ?, 1, NULL, NULL)",
      t0 + 3_600_000,
      width,
    );
    const keys = ["A", "B", "C"].map((k, i) => `[${Math.floor((t0 + i + 3_600_000) / width)},${keyHash64(k)},1,${t0 + i + 3_600_000},${i + 1}]`);
    sql.exec(
      "INSERT INTO keys (b, k, t, e, d) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?)",
      `[${keys.join(",")}]`,
    );
    sql.exec("INSERT INTO kept_batches (n, batch, until) VALUES (1, 's' || char(10) || 'b1', ?)", t0 + 2 + 3_600_000);
    sql.exec(
      "INSERT INTO receipts (b, k, n, dropped, conflicts) SELECT b, k, NULL, CASE WHEN d = 1 THEN 2 ELSE 2 END, CASE WHEN d = 2 THEN 1 ELSE 0 END FROM keys WHERE d IN (1, 2)",
    );
  });
  const receipts = () => Promise.all(["A", "B", "C"].map(async (k) => (await stub.lookup("e1", k))[0]));
  const after = await receipts();
  expect(after.map((r) => [r.batch, r.dropped, r.conflicts, r.expiresAt])).toEqual([
    ["s\nb1", 2, 0, t0 + 3_600_000],
    ["s\nb1", 2, 1, t0 + 3_600_001],
    ["s\nb1", 0, 0, t0 + 3_600_002],
  ]);
  expect(await schemaOf(stub)).toEqual({ version: Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)), receipts: [[0, 1]], tables: ["kept_names"] });
  // And it goes on: one more duplicate of A, a conflict of B, a new key D named by the new batch (numbers go on after b1's).
  const r = await applyOne(stub, { epoch: "e1", batch: "s\nb3", watermark: 0, settings: hashed, rows: [row(0, "A", "1"), row(1, "B", "7"), row(3, "D", "4")] });
  expect(r).toMatchObject({ decisions: "dce", rows: 4, kept: [[{ at: 1, batch: "s\nb1" }]] });
  expect((await stub.lookup("e1", "A"))[0]).toMatchObject({ dropped: 3, conflicts: 0, batch: "s\nb1" });
  expect((await stub.lookup("e1", "B"))[0]).toMatchObject({ dropped: 3, conflicts: 2, batch: "s\nb1" });
  expect((await stub.lookup("e1", "D"))[0]).toMatchObject({ dropped: 0, batch: "s\nb3", expiresAt: t0 + 3 + 3_600_000 });
  // Eviction goes by the absolute layout it kept: A, B, C go, D stays.
  expect(await stub.advance("e1", t0 + 3_600_002)).toMatchObject({ removed: 3, rows: 1 });
  expect(await stub.list("e1", "", 10)).toEqual([{ key: keyHashLabel("D"), eventTime: null, expiresAt: t0 + 3 + 3_600_000 }]);
});

it("a text partition of version 6 (batches named by their range of expiries or a receipts row) upgrades: each key names its batch from its own row", async () => {
  const stub = env.PARTITION.getByName("versions/6") as DurableObjectStub<Partition>;
  const settings: DedupSettings = { ...within, delay: 3_600_000 };
  const t0 = 1_704_103_200_000;
  const width = 900_000;
  const e = (i: number) => t0 + i + 3_600_000;
  // As version 6 kept them: b1 kept A, B (expiries [e0, e1], named by range); b2 kept C, whose expiry lies inside b1's range, so a receipts row names it;
  // b3 kept D (range [e5, e5]). A has two duplicates and a conflict counted in its receipts row.
  await layoutAt(stub, 6, (sql) => {
    sql.exec(
      "INSERT INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, front_b, pending) VALUES (1, 'e1', 0, 4, ?, ?, 0, NULL, NULL)",
      e(0),
      width,
    );
    for (const [k, i] of [
      ["A", 0],
      ["B", 2],
      ["C", 1],
      ["D", 5],
    ] as const)
      sql.exec("INSERT INTO keys (b, k, t, e, d) VALUES (?, ?, ?, ?, ?)", Math.floor(e(i) / width), k, t0 + i, e(i), i + 10);
    sql.exec("CREATE INDEX IF NOT EXISTS kept_batches_by_hi ON kept_batches (hi) WHERE hi IS NOT NULL");
    sql.exec(
      "INSERT INTO kept_batches (n, batch, until, lo, hi) VALUES (1, 's' || char(10) || 'b1', ?, ?, ?), (2, 's' || char(10) || 'b2', ?, NULL, NULL), (3, 's' || char(10) || 'b3', ?, ?, ?)",
      e(2),
      e(0),
      e(2),
      e(1),
      e(5),
      e(5),
      e(5),
    );
    sql.exec(
      "INSERT INTO receipts (b, k, n, dropped, conflicts) SELECT b, k, CASE k WHEN 'C' THEN 2 END, CASE k WHEN 'A' THEN 2 ELSE 0 END, CASE k WHEN 'A' THEN 1 ELSE 0 END FROM keys WHERE k IN ('A', 'C')",
    );
  });
  const expected = [
    ["A", "s\nb1", 2, 1],
    ["B", "s\nb1", 0, 0],
    ["C", "s\nb2", 0, 0],
    ["D", "s\nb3", 0, 0],
  ];
  const receipts = async () =>
    (await Promise.all(["A", "B", "C", "D"].map(async (k) => (await stub.lookup("e1", k))[0]))).map((r) => [r.key, r.batch, r.dropped, r.conflicts]);
  expect(await receipts()).toEqual(expected);
  expect(await schemaOf(stub)).toEqual({ version: Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)), receipts: [[0, 1]], tables: ["kept_names"] });
  expect((await stub.list("e1", "", 10)).map((x) => [x.key, x.eventTime, x.expiresAt])).toEqual([
    ["A", t0, e(0)],
    ["B", t0 + 2, e(2)],
    ["C", t0 + 1, e(1)],
    ["D", t0 + 5, e(5)],
  ]);
  // New batches are named after the old ones; drops count on in the key's row.
  const r = await applyOne(stub, {
    epoch: "e1",
    batch: "s\nb4",
    watermark: 0,
    settings,
    rows: [
      { index: 0, key: "E", eventTime: t0 + 7 },
      { index: 1, key: "B", eventTime: t0 + 8 },
    ],
  });
  expect(r).toMatchObject({ decisions: "ed", rows: 5, gaps: [[6]] });
  expect(await receipts()).toEqual([expected[0], ["B", "s\nb1", 1, 0], expected[2], expected[3]]);
  expect((await stub.lookup("e1", "E"))[0]).toMatchObject({ batch: "s\nb4", eventTime: t0 + 7, expiresAt: t0 + 7 + 3_600_000 });
  // The names go with their keys.
  expect(await stub.advance("e1", e(5))).toMatchObject({ removed: 4, rows: 1 });
  const left = await runInDurableObject(stub, (_p, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM kept_names").one().n);
  expect(left).toBe(0);
});

it("a hashed global partition of version 6 (every key named by a receipts row) upgrades: the number and counts move into its keys' rows", async () => {
  const stub = env.PARTITION.getByName("versions/6g") as DurableObjectStub<Partition>;
  const settings: DedupSettings = { mode: "global", delay: 0, hasEventTime: false, hashedKeys: true };
  // As version 6 kept them: no expiry, t the event time (null), each key's batch number and drop count in its receipts row.
  await layoutAt(stub, 6, (sql) => {
    sql.exec("INSERT INTO meta (id, epoch, watermark, rows, next_expiry, width, hashed, front_b, pending) VALUES (1, 'e1', 0, 2, NULL, 0, 1, NULL, NULL)");
    sql.exec(
      "INSERT INTO keys (b, k, t, e, d) SELECT 0, value ->> 0, NULL, NULL, value ->> 1 FROM json_each(?)",
      `[[${keyHash64("A")},5],[${keyHash64("B")},6]]`,
    );
    sql.exec("INSERT INTO kept_batches (n, batch, until) VALUES (1, 's' || char(10) || 'g1', NULL), (2, 's' || char(10) || 'g2', NULL)");
    sql.exec(
      "INSERT INTO receipts (b, k, n, dropped, conflicts) SELECT 0, k, CASE WHEN d = 5 THEN 1 ELSE 2 END, CASE WHEN d = 5 THEN 3 ELSE 0 END, CASE WHEN d = 5 THEN 1 ELSE 0 END FROM keys",
    );
  });
  const receipts = async () =>
    (await Promise.all(["A", "B"].map(async (k) => (await stub.lookup("e1", k))[0]))).map((r) => [r.batch, r.dropped, r.conflicts, r.expiresAt]);
  expect(await receipts()).toEqual([
    ["s\ng1", 3, 1, null],
    ["s\ng2", 0, 0, null],
  ]);
  expect(await schemaOf(stub)).toEqual({ version: Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)), receipts: [[0, 1]], tables: ["kept_names"] });
  const r = await applyOne(stub, {
    epoch: "e1",
    batch: "s\ng3",
    watermark: 0,
    settings,
    rows: [
      { index: 0, key: "B", eventTime: null },
      { index: 1, key: "C", eventTime: null },
    ],
  });
  expect(r).toMatchObject({ decisions: "de", rows: 3 });
  expect(await receipts()).toEqual([
    ["s\ng1", 3, 1, null],
    ["s\ng2", 1, 0, null],
  ]);
  expect((await stub.lookup("e1", "C"))[0]).toMatchObject({ batch: "s\ng3", dropped: 0 });
});

it("a stream written by version 8 (a row each for sources, advice, counters, partition figures; the outbox per entry) upgrades in place and reads back", async () => {
  const name = "versions-v8";
  await client.putStream(name, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 1 });
  const b1 = await post(name, [{ id: "A", ts: at(10, 0) }], { "idempotency-key": "v8-1" });
  await post(
    name,
    [
      { id: "B", ts: at(10, 1) },
      { id: "A", ts: at(10, 1) },
    ],
    { "idempotency-key": "v8-2", "x-source": "other" },
  );
  const stub = env.COORDINATOR.getByName(name);
  await runInDurableObject(stub, (c) => c.flush());
  await post(name, [{ id: "C", ts: at(10, 2) }], { "idempotency-key": "v8-3" });
  const before = {
    stream: await json(call("GET", `/v1/streams/${name}`)),
    output: await output(name),
    advice: await json(call("GET", `/v1/streams/${name}/advice`)),
    metrics: (await (await call("GET", "/metrics")).text()).split("\n").filter((l) => l.includes(`stream="${name}"`) && !l.includes("bookkeeping")),
  };
  expect(before.output.map((r) => r.id)).toEqual(["A", "B", "C"]);
  // Rewrite its storage as version 8 kept it: entries 1 and 2 flushed (one outbox_flushed row each), entry 3 waiting in an
  // AUTOINCREMENT outbox, and the state in the tables and rows it had.
  await runInDurableObject(stub, (_c, state) => {
    const sql = state.storage.sql;
    const record = JSON.parse(sql.exec<{ state: string }>("SELECT state FROM outbox ORDER BY id DESC LIMIT 1").one().state);
    const chunk = sql.exec<{ keys: string; offsets: string }>("SELECT keys, offsets FROM outbox_chunks").one();
    const keys = JSON.parse(chunk.keys) as Record<string, string>;
    // Version 8's commit index: a row per micro-batch (these have one member each), none in the outbox.
    const groups = sql
      .exec<{ seq: number; committed_at: number; max_t: number | null; members: string }>(
        "SELECT seq, committed_at, max_t, members FROM groups UNION ALL SELECT seq, committed_at, max_t, members FROM outbox ORDER BY seq",
      )
      .toArray()
      .flatMap((g) =>
        (JSON.parse(g.members) as unknown[]).map((m, i) => ({ ...g, seq: g.seq - (JSON.parse(g.members).length - 1) + i, members: JSON.stringify([m]) })),
      );
    const lengths = groups.map((g) => JSON.parse(g.members)[0][2] as string);
    // Version 8 kept each committed id's record as a row of batches, and a member of a commit record as its lanes alone.
    const ids = committedRecords(sql);
    for (const g of groups) g.members = JSON.stringify((JSON.parse(g.members) as unknown[][]).map((m) => m.slice(0, 3)));
    const waiting = sql.exec<{ id: number; at: number; data: ArrayBuffer; batches: string }>("SELECT id, at, data, batches FROM outbox").one();
    sql.exec(`DROP TABLE outbox; DROP TABLE outbox_chunks; DROP TABLE state; ALTER TABLE meta DROP COLUMN outbox_floor; UPDATE _schema SET version = 8;
      DROP TABLE id_slices;
      DROP TABLE groups; CREATE TABLE groups (seq INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, committed_at INTEGER NOT NULL, max_t INTEGER, members TEXT NOT NULL);
      CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, data BLOB NOT NULL, late BLOB NOT NULL, rejected BLOB NOT NULL,
        batches TEXT NOT NULL, conflicts BLOB NOT NULL DEFAULT x'', duplicates BLOB NOT NULL DEFAULT x'');
      CREATE TABLE sources (name TEXT PRIMARY KEY, max_t INTEGER, last_batch_at INTEGER) WITHOUT ROWID;
      CREATE TABLE advice (source TEXT PRIMARY KEY, figures TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE partition_figures (id INTEGER PRIMARY KEY CHECK (id = 1), f TEXT NOT NULL);
      CREATE TABLE counters (id INTEGER PRIMARY KEY CHECK (id = 1), c TEXT NOT NULL);`);
    for (const [id, ...offsets] of JSON.parse(chunk.offsets) as [number, number | null][]) {
      const length = Number(/#\d+\+(\d+)$/.exec(lengths[id - 1])![1]);
      sql.exec("INSERT INTO outbox_flushed (id, data) VALUES (?, ?)", id, `${keys.data}#${offsets[0]}+${length}`);
    }
    for (const g of groups) sql.exec("INSERT INTO groups VALUES (?, ?, ?, ?, ?)", g.seq, g.seq, g.committed_at, g.max_t, g.members);
    for (const r of ids)
      sql.exec("INSERT INTO batches (source, batch_id, body_hash, seq, report) VALUES (?, ?, ?, ?, ?)", r.source, r.batch_id, r.body_hash, r.seq, r.report);
    sql.exec("INSERT INTO outbox (id, at, data, late, rejected, batches) VALUES (?, ?, ?, x'', x'', ?)", waiting.id, waiting.at, waiting.data, waiting.batches);
    for (const [n, t, last] of record.sources) sql.exec("INSERT INTO sources VALUES (?, ?, ?)", n, t, last);
    for (const [s, f] of record.advice) sql.exec("INSERT INTO advice VALUES (?, ?)", s, JSON.stringify(f));
    sql.exec("INSERT INTO partition_figures VALUES (1, ?)", JSON.stringify(record.partitions));
    sql.exec("INSERT INTO counters VALUES (1, ?)", JSON.stringify(record.counters));
    sql.exec("UPDATE meta SET watermark = ?", record.watermark);
  });
  await evictDurableObject(stub);

  // Everything reads back as it was: the stream, its output (flushed and waiting), the advisor, the counters.
  expect(await json(call("GET", `/v1/streams/${name}`))).toEqual({
    ...before.stream,
    bookkeeping: { ...before.stream.bookkeeping, bytes: expect.any(Number) },
  });
  expect(await output(name)).toEqual(before.output);
  expect(await json(call("GET", `/v1/streams/${name}/advice`))).toEqual(before.advice);
  const metrics = (await (await call("GET", "/metrics")).text()).split("\n").filter((l) => l.includes(`stream="${name}"`) && !l.includes("bookkeeping"));
  expect(metrics).toEqual(before.metrics);
  expect(await post(name, [{ id: "A", ts: at(10, 0) }], { "idempotency-key": "v8-1" })).toEqual({ ...b1, replayed: true });
  // New commits go on: their outbox entries are numbered above every id the old outbox gave, then flushed with the old one.
  expect(
    await post(
      name,
      [
        { id: "D", ts: at(10, 3) },
        { id: "C", ts: at(10, 3) },
      ],
      { "idempotency-key": "v8-4" },
    ),
  ).toMatchObject({ emitted: 1, duplicates: 1 });
  const ids = await runInDurableObject(stub, (_c, state) => ({
    version: state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
    sealed: state.storage.sql
      .exec<{ id: number }>("SELECT id FROM outbox_sealed")
      .toArray()
      .map((r) => r.id),
    waiting: state.storage.sql
      .exec<{ id: number }>("SELECT id FROM outbox")
      .toArray()
      .map((r) => r.id),
    old: state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name IN ('sources', 'advice', 'counters', 'partition_figures')").toArray().length,
  }));
  expect(ids).toEqual({ version: Math.max(...COORDINATOR_MIGRATIONS.map((m) => m.version)), sealed: [3], waiting: [3 + 4], old: 0 });
  expect((await output(name)).map((r) => r.id)).toEqual(["A", "B", "C", "D"]);
  expect(await runInDurableObject(stub, (c) => c.flush())).toBe(2);
  expect((await output(name)).map((r) => r.id)).toEqual(["A", "B", "C", "D"]);
  expect((await json(call("GET", `/v1/streams/${name}/progress`))).progress.map((p: { batchId: string }) => p.batchId)).toEqual([
    "v8-1",
    "v8-2",
    "v8-3",
    "v8-4",
  ]);
});

it("a new partition gets at once the layout the migrations build step by step (tables, columns, keys, indexes)", async () => {
  const shape = (stub: DurableObjectStub<Partition>) =>
    runInDurableObject(stub, (_p, state) => {
      const sql = state.storage.sql;
      const tables = sql
        .exec<{ name: string; type: string }>("SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name")
        .toArray();
      return {
        version: sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
        tables: tables.map((t) => ({
          ...t,
          columns: t.type === "table" ? sql.exec(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info('${t.name}')`).toArray() : null,
          withoutRowid:
            t.type === "table" ? /WITHOUT ROWID/i.test(sql.exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE name = ?", t.name).one().sql) : null,
        })),
      };
    });
  const fresh = env.PARTITION.getByName("versions/fresh") as DurableObjectStub<Partition>;
  await fresh.describe("e1"); // constructed on empty storage
  const stepped = env.PARTITION.getByName("versions/stepped") as DurableObjectStub<Partition>;
  await layoutAt(stepped, Math.max(...PARTITION_MIGRATIONS.map((m) => m.version)), () => {});
  const want = await shape(stepped);
  expect(want.tables.map((t) => t.name)).toEqual(["_schema", "fence", "inherited", "kept_names", "ledger", "meta", "receipts", "segments"]);
  expect(await shape(fresh)).toEqual(want);
  // And it works as one: a batch stored, found, listed.
  const r = await applyOne(fresh, {
    epoch: "e1",
    batch: "s\nb1",
    watermark: 0,
    settings: within,
    rows: [
      { index: 0, key: "A", eventTime: 1000 },
      { index: 1, key: "A", eventTime: 1001 },
    ],
  });
  expect(r).toMatchObject({ decisions: "ed", rows: 1 });
  expect((await fresh.lookup("e1", "A"))[0]).toMatchObject({ batch: "s\nb1", dropped: 1, expiresAt: 1100, eventTime: 1000 });
});

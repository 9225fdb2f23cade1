/**
 * Reading the local table with no network and no Iceberg catalog (issue
 * #33, README "Reading the table locally"): against a real `wrangler dev`,
 * the typed client lists the current snapshot's data files (GET …/table),
 * downloads each (GET …/table/file), and DuckDB reads them with
 * read_parquet: the rows are the stream's output, each id once, through an
 * append after a compaction's worth of small files. And a table queried at
 * scale: an unpartitioned table upgraded to `partitionBy: "day"`, read with
 * avsc (manifests) and DuckDB (data files): every new file holds one day,
 * which its manifest entry records, and its metrics are the file's figures;
 * the snapshot replaced more than `retain` ago is expired and its manifest
 * list deleted, while the current snapshot reads whole.
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { main } from "../../src/cli/main.ts";
import { createClient } from "../../src/client/index.ts";
import { decodeWithAvsc } from "../support/avsc-reader";
import { at, pollUntil, sleep, useServer } from "./server";

const { server, api } = useServer();
const client = createClient({ baseUrl: () => server.url, token: () => server.token });

/** The table once it holds every commit so far (GET …/publication's table reaches committed). */
async function published(stream: string) {
  const committed = (await client.publication(stream)).committed;
  await pollUntil(
    () => client.publication(stream),
    (p) => p.table === committed,
    60_000,
    250,
  );
  return client.table(stream);
}

describe("the local table, read without a catalog", () => {
  test("GET …/table's files, downloaded, read by DuckDB: the output's rows", async () => {
    const s = "table-read";
    await api.putStream(s, {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "1 hour",
      schema: { id: "string", amount: "double", ts: "timestamp" },
      table: { format: "iceberg" },
    });
    for (let b = 0; b < 10; b++) {
      await api.ingest(
        s,
        Array.from({ length: 5 }, (_, i) => ({ id: `o-${b * 4 + i}`, amount: b + i / 10, ts: at(10, b) })),
        { batchId: `b${b}` },
      );
    }
    const table = await published(s);
    expect(table.files).not.toBeNull();
    const dir = await mkdtemp(join(tmpdir(), "table-read-"));
    try {
      const paths: string[] = [];
      for (const f of table.files!) {
        const path = join(dir, f.path.replaceAll("/", "_"));
        await writeFile(path, await client.tableFile(s, f.path));
        paths.push(path);
      }
      expect(paths.length).toBeGreaterThan(0);
      const db = await (await DuckDBInstance.create(":memory:")).connect();
      const rows = (
        await db.runAndReadAll(
          `SELECT id, amount, epoch_ms(ts) AS ts FROM read_parquet([${paths.map((p) => `'${p}'`).join(",")}], union_by_name=true) ORDER BY id`,
        )
      ).getRowObjectsJson();
      const out = (await api.output<{ id: string; amount: number; ts: number }>(s)).map((r) => ({ id: r.id, amount: r.amount, ts: String(r.ts) }));
      expect(rows.map((r) => ({ id: r.id, amount: Number(r.amount), ts: String(r.ts) }))).toEqual(out.sort((a, b) => (a.id < b.id ? -1 : 1)));
      expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("edge-dedup table", () => {
  test("downloads the current snapshot's files and prints the DuckDB query that reads them; an earlier download's stale files go", async () => {
    const s = "table-cli";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", schema: { id: "string", ts: "timestamp" }, table: { format: "iceberg" } });
    await api.ingest(
      s,
      [
        { id: "a", ts: at(10) },
        { id: "b", ts: at(11) },
        { id: "a", ts: at(12) },
      ],
      { batchId: "one" },
    );
    await published(s);
    const dir = await mkdtemp(join(tmpdir(), "table-cli-"));
    try {
      await writeFile(join(dir, "stale.parquet"), "not this snapshot's");
      let out = "";
      let err = "";
      const io = {
        stdout: { write: (t: string) => (out += t) },
        stderr: { write: (t: string) => (err += t), isTTY: false },
        env: { EDGE_DEDUP_TOKEN: server.token },
      };
      expect(await main(["table", s, "--url", server.url, "--out", dir, "--json"], io as never), err).toBe(0);
      const written = JSON.parse(out);
      expect(written).toMatchObject({ stream: s, records: 2, out: dir });
      const db = await (await DuckDBInstance.create(":memory:")).connect();
      const rows = (await db.runAndReadAll(`${written.query} ORDER BY id`)).getRowObjectsJson();
      expect(rows.map((r) => r.id)).toEqual(["a", "b"]);
      // Exit 1 with the service's reason for a stream without a table; 2 for a usage error.
      err = "";
      expect(await main(["table", "no-such-stream", "--url", server.url, "--out", dir], io as never)).toBe(1);
      expect(err).toMatch(/404/);
      expect(await main(["table", "--url", server.url], io as never)).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("a table partitioned by event day, with snapshot expiry", () => {
  test("an unpartitioned table upgrades; each new file holds one day with its metrics; the expired snapshot's files go; the table reads whole", async () => {
    const s = "table-days";
    const DAY = 86_400_000;
    const config = (partitionBy?: string) => ({
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "1 day",
      schema: { id: "string", amount: "double", ts: "timestamp" },
      table: { format: "iceberg", retain: "1 second", ...(partitionBy ? { partitionBy } : {}) },
    });
    const fileStatus = async (path: string) =>
      (await fetch(`${server.url}/v1/streams/${s}/table/file?path=${encodeURIComponent(path)}`, { headers: { authorization: `Bearer ${server.token}` } }))
        .status;
    const inTable = (uri: string) => uri.slice(uri.indexOf(`/tables/${s}/`) + `/tables/${s}/`.length);

    await api.putStream(s, config("none"));
    await api.ingest(
      s,
      [
        { id: "old-1", amount: 1, ts: at(9) },
        { id: "old-2", amount: 2, ts: at(23) },
      ],
      { batchId: "old" },
    );
    const before = await published(s);
    expect(before.partitionSpec.fields).toEqual([]);
    const oldList = inTable(before.snapshot["manifest-list"]);
    expect(await fileStatus(oldList)).toBe(200);
    // Upgraded: partitionBy left out is "day" for a stream with an event time.
    expect((await api.putStream(s, config())).status).toBe(200);
    await api.ingest(
      s,
      Array.from({ length: 6 }, (_, i) => ({ id: `n-${i}`, amount: i / 4, ts: at(20) + i * 4 * 3_600_000 })),
      { batchId: "new" },
    );
    await published(s);
    await sleep(1_500);
    // Within a day of what the watermark implies (maxAheadOfWatermark), so not rejected.
    expect((await api.ingest(s, [{ id: "last", amount: 9, ts: at(2) + 2 * DAY }], { batchId: "last" })).emitted).toBe(1);
    await published(s);
    // The snapshot replaced more than retain ago leaves the metadata, and the sweep (due at once) deletes what only it used.
    expect(
      await pollUntil(
        () => fileStatus(oldList),
        (status) => status === 404,
        30_000,
        250,
      ),
    ).toBe(404);
    const after = await client.table(s);
    expect(after).toMatchObject({ partitionBy: "day", specs: 2, partitionSpec: { fields: [{ name: "ts_day", transform: "day" }] } });
    expect(after.retention).toMatchObject({ retainMs: 1000, snapshots: 2 });
    expect(after.partitions!.map((p) => [p.partition, p.records])).toEqual([
      [null, 2],
      ["ts_day=2024-01-01", 1],
      ["ts_day=2024-01-02", 5],
      ["ts_day=2024-01-03", 1],
    ]);

    const dir = await mkdtemp(join(tmpdir(), "table-days-"));
    try {
      const db = await (await DuckDBInstance.create(":memory:")).connect();
      const query = async (sql: string) => (await db.runAndReadAll(sql)).getRowObjectsJson() as Record<string, any>[];
      const list = await decodeWithAvsc(await client.tableFile(s, inTable(after.snapshot["manifest-list"])));
      const metadata = JSON.parse(new TextDecoder().decode(await client.tableFile(s, inTable(after.metadataLocation))));
      const tsId = metadata.schemas.at(-1).fields.find((f: { name: string }) => f.name === "ts").id;
      const paths: string[] = [];
      for (const m of list.records) {
        const manifest = await decodeWithAvsc(await client.tableFile(s, inTable(m.manifest_path as string)));
        for (const e of manifest.records.filter((x) => x.status !== 2)) {
          const file = e.data_file as Record<string, any>;
          const path = join(dir, `${paths.length}.parquet`);
          await writeFile(path, await client.tableFile(s, inTable(file.file_path)));
          paths.push(path);
          const [fig] = await query(
            `SELECT count(*) AS n, list(DISTINCT epoch_us(ts) // ${DAY * 1000}) AS days, min(epoch_us(ts))::VARCHAR AS lo, max(epoch_us(ts))::VARCHAR AS hi FROM read_parquet('${path}')`,
          );
          if (m.partition_spec_id === 0) expect(file.partition).toEqual({});
          else expect((fig.days as string[]).map(Number)).toEqual([file.partition.ts_day]);
          const entry = (a: { key: number; value: any }[]) => a.find((x) => x.key === tsId)!.value;
          expect(Number(file.record_count)).toBe(Number(fig.n));
          expect(Number(entry(file.value_counts))).toBe(Number(fig.n));
          expect(String((entry(file.lower_bounds) as Buffer).readBigInt64LE(0))).toBe(fig.lo);
          expect(String((entry(file.upper_bounds) as Buffer).readBigInt64LE(0))).toBe(fig.hi);
        }
      }
      expect(paths).toHaveLength(4);
      const rows = await query(`SELECT id FROM read_parquet([${paths.map((p) => `'${p}'`).join(",")}], union_by_name=true) ORDER BY id`);
      const out = (await api.output<{ id: string }>(s)).map((r) => r.id).sort();
      expect(rows.map((r) => r.id)).toEqual(out);
      expect(out).toHaveLength(9);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/**
 * Reading the local table with no network and no Iceberg catalog (issue
 * #33, README "Reading the table locally"): against a real `wrangler dev`,
 * the typed client lists the current snapshot's data files (GET …/table),
 * downloads each (GET …/table/file), and DuckDB reads them with
 * read_parquet: the rows are the stream's output, each id once, through an
 * append after a compaction's worth of small files.
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createClient } from "../../src/client/index.ts";
import { at, pollUntil, useServer } from "./server";

const { server, api } = useServer();

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
    const client = createClient({ baseUrl: () => server.url, token: () => server.token });
    const committed = (await client.publication(s)).committed;
    await pollUntil(
      () => client.publication(s),
      (p) => p.table === committed,
      60_000,
      250,
    );
    const table = await client.table(s);
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

import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { appendToTable, compactTable, r2Store, readTableSnapshot } from "../../../src/table";
import { loadTable } from "../../../src/table/commit";
import { currentSchema } from "../../../src/table/metadata";
import { decodeDataFile } from "../../../src/table/parquet";
import { liveDataFiles, readDataFileBytes } from "../../../src/table/snapshot-files";

/**
 * The table writer inside workerd against the local R2 binding: hyparquet-writer,
 * avsc and hyparquet run in the Workers runtime, create-only puts decide commits.
 */
const T0 = Date.UTC(2026, 0, 1);
const schema = { id: "string", n: "long", at: "timestamp" } as const;

async function tableRows(stream: string) {
  const store = r2Store(env.SINK);
  const { table } = (await loadTable(store, stream))!;
  const files = await liveDataFiles(store, stream, table.location, (await readTableSnapshot(store, stream))!.snapshot);
  const rows = await Promise.all(files.map(async (f) => decodeDataFile(currentSchema(table)!, await readDataFileBytes(store, stream, table.location, f))));
  return rows.flat();
}

it("appends exactly once, compacts, and reads back from R2", async () => {
  const store = r2Store(env.SINK);
  const append = (commitSeq: number, rows: Record<string, unknown>[]) => appendToTable(store, { stream: "wt", schema, rows, commitSeq, now: T0 + commitSeq });
  expect(
    await append(1, [
      { id: "a", n: 1, at: T0 },
      { id: "b", n: 2, at: "2026-01-01T00:00:01Z", tag: "x" },
    ]),
  ).toMatchObject({
    skipped: false,
    sequenceNumber: 1,
    metadataLocation: "r2://edge-dedup-output/tables/wt/metadata/v1.metadata.json",
  });
  expect(await append(2, [{ id: "c", n: 3 }])).toMatchObject({ skipped: false, sequenceNumber: 2 });
  expect(await append(2, [{ id: "c", n: 3 }])).toMatchObject({ skipped: true, sequenceNumber: 2 });
  expect(await store.put("tables/wt/metadata/v2.metadata.json", "{}", { createOnly: true })).toBe(false);
  expect(new TextDecoder().decode((await store.get("tables/wt/metadata/version-hint.text"))!)).toBe("2");

  expect(await compactTable(store, "wt", { minFiles: 2, targetBytes: 1 << 20, now: T0 + 10 })).toMatchObject({ compacted: true, filesRewritten: 2 });
  expect((await readTableSnapshot(store, "wt"))!.snapshot.summary).toMatchObject({
    operation: "replace",
    "total-records": "3",
    "total-data-files": "1",
    "edge-dedup.commit-seq": "2",
  });
  expect(await tableRows("wt")).toEqual([
    ["a", 1n, BigInt(T0) * 1000n, null],
    ["b", 2n, BigInt(T0 + 1000) * 1000n, "x"],
    ["c", 3n, null, null],
  ]);
  expect(await append(3, [{ id: "d" }])).toMatchObject({ skipped: false, sequenceNumber: 4 });
  expect((await tableRows("wt")).map((r) => r[0])).toEqual(["a", "b", "c", "d"]);
});

/**
 * The seed's exercise as a Spark user writes it (#15, DESIGN §7), end to end
 * on a real `wrangler dev`: a folder of Spark-style `part-*.json` files, JSON
 * Lines (one object per line, as Spark's JSON source reads and Spark jobs
 * write), with duplicates within a file, across files and across runs; three
 * availableNow-style runs over the prefix with a restart of the server between
 * them. Each run is checked right after it reports done (no waiting for the
 * table to catch up): the Iceberg table, read through its Parquet files by
 * DuckDB (metadata → manifest list → manifests decoded by avsc, not by our
 * code), equals a DuckDB oracle over the same files that keeps one row per
 * event_id: no duplicates, no loss. Along the way: a gzip file, a bad line
 * (a rejected row naming its line), maxFilesPerTrigger, cleanSource archive,
 * and a multiLine run over pretty-printed documents.
 */
import { DuckDBInstance } from "@duckdb/node-api";
import avro from "avsc";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, test } from "vitest";
import { pollUntil, useServer } from "./server";

const { server, api } = useServer({ faults: true });

const STREAM = "spark";
const PREFIX = "landing/events/";
const DOCS = "landing/docs/";
const ARCHIVE = "archive/";
const BASE = Date.UTC(2026, 10, 30, 8, 0, 0);

interface Event {
  event_id: string;
  company_id: string;
  amount: number;
  event_ts: string;
}

const dir = mkdtempSync(join(tmpdir(), "edge-dedup-spark-"));
const lines = join(dir, "lines");
const docs = join(dir, "docs");
const parquet = join(dir, "parquet");
for (const d of [lines, docs, parquet]) mkdirSync(d);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
const seen: Event[] = [];
/** A new event, or (every third row, once there are some) an identical copy of one seen before: a redelivery. */
function nextEvent(i: number): Event {
  if (seen.length > 3 && i % 3 === 2) return seen[(i * 7) % seen.length];
  const n = ++counter;
  const e = { event_id: `evt_${n}`, company_id: `co_${n % 5}`, amount: ((n * 37) % 10_000) / 100, event_ts: new Date(BASE + n * 1000).toISOString() };
  seen.push(e);
  return e;
}

/** A Spark-style part file: JSON Lines; `within` copies a row inside the file too. */
function partFile(rows: number): Event[] {
  const out = Array.from({ length: rows }, (_, i) => nextEvent(i));
  out.push(out[1]); // a duplicate within the file
  return out;
}

const jsonl = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n";

async function put(key: string, body: Uint8Array<ArrayBuffer>): Promise<void> {
  const res = await fetch(`${server.url}/__test/input/${encodeURIComponent(key)}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${server.token}` },
    body,
  });
  if (res.status !== 201) throw new Error(`put ${key}: ${res.status} ${await res.text()}`);
}

/** Writes the file into the local folder (the oracle reads it) and uploads the same bytes. */
async function upload(name: string, text: string, opts: { gzip?: boolean; folder?: string; prefix?: string } = {}): Promise<void> {
  const bytes = new Uint8Array(opts.gzip ? gzipSync(text) : Buffer.from(text));
  writeFileSync(join(opts.folder ?? lines, name), bytes);
  await put((opts.prefix ?? PREFIX) + name, bytes);
}

interface RunView {
  status: string;
  files: { done: number; skipped: number; failed: number };
  input: number;
  emitted: number;
  rejected: number;
  errors: { key: string; detail: string }[];
  publication: { commitSeq: number; manifest: number; table: number | null; snapshot: { "total-records": number; "commit-seq": number } | null } | null;
}

async function run(body: Record<string, unknown>): Promise<RunView> {
  const res = await api.request("POST", `/v1/streams/${STREAM}/runs`, { body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  expect(res.status, res.text).toBe(202);
  const id = JSON.parse(res.text).id as string;
  const view = async () => {
    const r = await api.request("GET", `/v1/streams/${STREAM}/runs/${id}`);
    if (r.status !== 200) throw new Error(`GET run: ${r.status} ${r.text}`);
    return JSON.parse(r.text) as RunView;
  };
  return pollUntil(view, (v) => v.status !== "running", 120_000, 100);
}

async function sink(key: string): Promise<Uint8Array> {
  const res = await fetch(`${server.url}/__test/sink/${encodeURIComponent(key)}`, { headers: { authorization: `Bearer ${server.token}` } });
  if (res.status !== 200) throw new Error(`sink ${key}: ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** Avro object container file → its records, by avsc (an independent decoder). */
async function avroRecords(bytes: Uint8Array): Promise<Record<string, any>[]> {
  const path = join(dir, `m-${Math.random().toString(36).slice(2)}.avro`);
  writeFileSync(path, bytes);
  const records: Record<string, any>[] = [];
  await new Promise<void>((resolve, reject) => {
    avro
      .createFileDecoder(path)
      .on("data", (r: Record<string, any>) => records.push(r))
      .on("end", resolve)
      .on("error", reject);
  });
  return records;
}

/** The table's current snapshot as Iceberg readers find it: version-hint → metadata → manifest list → live data files. */
async function tableFiles(): Promise<{ files: string[]; totalRecords: number }> {
  const root = `tables/${STREAM}/`;
  const version = new TextDecoder().decode(await sink(`${root}metadata/version-hint.text`)).trim();
  const meta = JSON.parse(new TextDecoder().decode(await sink(`${root}metadata/v${version}.metadata.json`)));
  const snapshot = meta.snapshots.find((s: { "snapshot-id": number }) => s["snapshot-id"] === meta["current-snapshot-id"]);
  const keyOf = (uri: string) => root + uri.slice(meta.location.length + 1);
  const files: string[] = [];
  for (const m of await avroRecords(await sink(keyOf(snapshot["manifest-list"])))) {
    for (const e of await avroRecords(await sink(keyOf(m.manifest_path)))) {
      if (e.status !== 2) files.push(e.data_file.file_path); // 2: deleted
    }
  }
  return { files, totalRecords: Number(snapshot.summary["total-records"]) };
}

/** An instant as ISO text, from epoch ms (a number or digits, as DuckDB answers BIGINT) or ISO text. */
const instant = (v: unknown) => new Date(typeof v === "number" || /^\d+$/.test(String(v)) ? Number(v) : String(v)).toISOString();
type Row = { event_id: string; company_id: string; amount: number; event_ts: string };
const norm = (rows: Record<string, unknown>[]): Row[] =>
  rows
    .map((r) => ({
      event_id: String(r.event_id),
      company_id: String(r.company_id),
      amount: Number(r.amount),
      event_ts: instant(r.event_ts),
    }))
    .sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));

/** The table through its Parquet files, by DuckDB. */
async function tableRows(): Promise<{ rows: Row[]; totalRecords: number }> {
  const { files, totalRecords } = await tableFiles();
  const paths: string[] = [];
  for (const [i, f] of files.entries()) {
    const local = join(parquet, `${Date.now()}-${i}.parquet`);
    writeFileSync(local, await sink(`tables/${STREAM}/` + f.slice(f.indexOf("/data/") + 1)));
    paths.push(local);
  }
  const db = await (await DuckDBInstance.create(":memory:")).connect();
  const reader = await db.runAndReadAll(
    `SELECT event_id, company_id, amount, epoch_ms(event_ts) AS event_ts FROM read_parquet([${paths.map((p) => `'${p}'`).join(", ")}])`,
  );
  return { rows: norm(reader.getRowObjectsJson() as Record<string, unknown>[]), totalRecords };
}

/** DuckDB over the local folder: JSON Lines (gzip too; bad lines skipped) and the whole-file documents; one row per event_id. */
async function oracle(): Promise<Row[]> {
  const db = await (await DuckDBInstance.create(":memory:")).connect();
  const columns = "columns = {event_id: 'VARCHAR', company_id: 'VARCHAR', amount: 'DOUBLE', event_ts: 'VARCHAR'}";
  const list = (folder: string, gz: boolean) => {
    const names = readdirSync(folder).filter((f) => f.endsWith(".gz") === gz);
    return names.length === 0 ? null : `[${names.map((f) => `'${join(folder, f)}'`).join(", ")}]`;
  };
  const field = (name: string) => `json_extract_string(line, '$.${name}') AS ${name}`;
  // JSON Lines as Spark's PERMISSIVE mode reads them: every line that is JSON is a row, one that is not is skipped alone.
  const plain = list(lines, false);
  const parts =
    plain === null
      ? []
      : [
          `SELECT ${field("event_id")}, ${field("company_id")}, CAST(json_extract(line, '$.amount') AS DOUBLE) AS amount, ${field("event_ts")}
    FROM (SELECT unnest(string_split(content, chr(10))) AS line FROM read_text(${plain})) WHERE trim(line) <> '' AND json_valid(line)`,
        ];
  const gz = list(lines, true);
  if (gz !== null) parts.push(`SELECT * FROM read_json(${gz}, format = 'newline_delimited', ${columns})`);
  const whole = list(docs, false);
  if (whole !== null) parts.push(`SELECT * FROM read_json(${whole}, format = 'array', ${columns})`);
  const reader = await db.runAndReadAll(`
    WITH input AS (${parts.join(" UNION ALL ")})
    SELECT DISTINCT ON (event_id) event_id, company_id, amount, event_ts FROM input WHERE event_id IS NOT NULL ORDER BY event_id`);
  return norm(reader.getRowObjectsJson() as Record<string, unknown>[]);
}

/** Right after done: the table (and its snapshot count, and /output) equal the oracle; the run says which snapshot it waited for. */
async function checkNow(view: RunView): Promise<number> {
  const want = await oracle();
  const table = await tableRows();
  expect(new Set(table.rows.map((r) => r.event_id)).size, "no duplicates in the table").toBe(table.rows.length);
  expect(table.rows, "the table equals the oracle").toEqual(want);
  expect(table.totalRecords).toBe(want.length);
  expect(view.publication?.snapshot?.["total-records"]).toBe(want.length);
  expect(view.publication?.table).toBeGreaterThanOrEqual(view.publication!.commitSeq);
  expect(norm(await api.output(STREAM))).toEqual(want);
  return want.length;
}

describe("the seed's exercise, as a Spark user writes it", () => {
  test("part-*.json JSON Lines, three runs with restarts between them: right after each done, the table equals the DuckDB oracle", async () => {
    await api.putStream(STREAM, {
      key: ["event_id"],
      mode: "global",
      partitions: 4,
      schema: { event_id: "string", company_id: "string", amount: "double", event_ts: "timestamp" },
      table: { format: "iceberg" },
    });

    // Run 1: four part files and a gzipped one, read one file per micro-batch.
    for (let f = 0; f < 4; f++) await upload(`part-0000${f}-a1b2.c000.json`, jsonl(partFile(12)));
    await upload("part-00004-a1b2.c000.json.gz", jsonl(partFile(8)), { gzip: true });
    const first = await run({ prefix: PREFIX, source: "landing" });
    expect(first).toMatchObject({ status: "done", files: { done: 5, failed: 0 }, rejected: 0, errors: [] });
    const n1 = await checkNow(first);
    expect(n1).toBeGreaterThan(30);

    await server.restart("SIGTERM");

    // Run 2: new files that repeat events of run 1 (across runs), three files per micro-batch.
    for (let f = 5; f < 9; f++) await upload(`part-0000${f}-c3d4.c000.json`, jsonl([...partFile(10), seen[f]]));
    const second = await run({ prefix: PREFIX, source: "landing", maxFilesPerTrigger: 3 });
    expect(second).toMatchObject({ status: "done", files: { done: 4, skipped: 5, failed: 0 }, errors: [] });
    const n2 = await checkNow(second);
    expect(n2).toBeGreaterThan(n1);

    await server.restart("SIGKILL");

    // Run 3: a file with a line that is not JSON (a rejected row naming it; the rest goes in), archived after commit.
    const good = partFile(10);
    await upload("part-00009-e5f6.c000.json", `${jsonl(good.slice(0, 4))}{"event_id": "evt_broken", "amount": \n${jsonl(good.slice(4))}`);
    await upload("part-00010-e5f6.c000.json", jsonl([...partFile(6), seen[0]]));
    const third = await run({ prefix: PREFIX, source: "landing", cleanSource: "archive", sourceArchiveDir: ARCHIVE });
    expect(third).toMatchObject({ status: "done", files: { done: 2, skipped: 9, failed: 0 }, rejected: 1, errors: [] });
    const n3 = await checkNow(third);
    expect(n3).toBeGreaterThan(n2);
    const rejected = (await api.request("GET", `/v1/streams/${STREAM}/rejected`)).text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rejected).toEqual([expect.objectContaining({ index: 4, reason: "line 5 is not valid JSON" })]);
    // The archived files left the prefix: a run over it finds only the earlier runs' files, ingested already.
    const again = await run({ prefix: PREFIX, source: "landing" });
    expect(again).toMatchObject({ status: "done", files: { done: 0, skipped: 9 }, emitted: 0 });
    const archived = await run({ prefix: `${ARCHIVE}${PREFIX}part-00010`, source: "landing" });
    // The archived copy has the same bytes but another key: a new batch id whose rows are all duplicates.
    expect(archived).toMatchObject({ status: "done", files: { done: 1 }, input: 8, emitted: 0 });

    // And a Spark multiLine job's output: pretty-printed JSON documents, read whole with "multiLine": true.
    await upload("part-00000-docs.json", JSON.stringify([...partFile(5), seen[2]], null, 2), { folder: docs, prefix: DOCS });
    const whole = await run({ prefix: DOCS, source: "landing", multiLine: true });
    expect(whole).toMatchObject({ status: "done", files: { done: 1, failed: 0 }, rejected: 0 });
    expect(await checkNow(whole)).toBeGreaterThan(n3);
  });
});

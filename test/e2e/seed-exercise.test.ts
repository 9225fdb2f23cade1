/**
 * The seed's exercise, end to end on a real `wrangler dev` (DESIGN §7): an
 * at-least-once source delivers each event one or more times as JSON files in
 * a folder; the stream keeps one row per `event_id` (within-watermark, 30
 * minutes on `event_ts`) and appends to an Iceberg table; the job runs three
 * times over a growing folder (availableNow runs over one prefix), with
 * duplicates inside a run, across runs, a re-uploaded file, and late rows; the
 * server is killed in the middle of the third run. The table, read back by an
 * independent reader (icebird, following the metadata), must equal a DuckDB
 * oracle over the input files: one row per id, no loss, nothing late.
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { serveBucket, type ServedBucket } from "../support/iceberg-reader";
import { rng } from "../support/rng";
import { pollUntil, useServer } from "./server";

const { server, api } = useServer({ faults: true });

const MINUTE = 60_000;
const BASE = Date.UTC(2026, 10, 30, 8, 0, 0);
const STREAM = "seed";
const PREFIX = "landing/events/";
const FILES_PER_RUN = 12;

interface Event {
  event_id: string;
  company_id: string;
  amount: number;
  event_ts: string;
}

const dir = mkdtempSync(join(tmpdir(), "edge-dedup-seed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Files of one run: event times move forward with the file (3 minutes a
 * file); ~30% of rows repeat an event from the last 40 (inside this run or,
 * for the first files of a run, the previous one), always identical copies
 * and within the 30-minute horizon; from the second run on, a few rows are
 * events from long before (late: behind the watermark when they arrive).
 */
function makeRun(run: number, recent: Event[], next: () => number): { name: string; rows: Event[] }[] {
  const random = rng(1000 + run);
  return Array.from({ length: FILES_PER_RUN }, (_, f) => {
    const n = run * FILES_PER_RUN + f;
    const at = BASE + n * 3 * MINUTE;
    const rows: Event[] = [];
    for (let i = 0; i < 25; i++) {
      if (recent.length > 0 && random() < 0.3) {
        rows.push(recent[Math.floor(random() * Math.min(40, recent.length))]); // a redelivery
        continue;
      }
      const e: Event = {
        event_id: `evt_${next()}`,
        company_id: `co_${Math.floor(random() * 5)}`,
        amount: Math.round(random() * 10_000) / 100,
        event_ts: new Date(at + Math.floor(random() * 2 * MINUTE)).toISOString(),
      };
      rows.push(e);
      recent.unshift(e);
    }
    if (run > 0 && f % 4 === 1) {
      // An event from three hours before the stream's first file: late whenever it comes.
      rows.push({ event_id: `old_${run}_${f}`, company_id: "co_old", amount: 1, event_ts: new Date(BASE - 3 * 60 * MINUTE).toISOString() });
    }
    return { name: `part-${String(n).padStart(4, "0")}.json`, rows };
  });
}

async function upload(name: string, rows: Event[]): Promise<void> {
  const body = JSON.stringify(rows);
  writeFileSync(join(dir, name), body);
  const res = await api.request("PUT", `/__test/input/${encodeURIComponent(PREFIX + name)}`, { body });
  if (res.status !== 201) throw new Error(`put ${name}: ${res.status} ${res.text}`);
}

async function runOnce(): Promise<string> {
  const res = await api.request("POST", `/v1/streams/${STREAM}/runs`, {
    body: JSON.stringify({ prefix: PREFIX, source: "landing" }),
    headers: { "content-type": "application/json" },
  });
  expect(res.status, res.text).toBe(202);
  return JSON.parse(res.text).id;
}

async function runView(id: string) {
  const res = await api.request("GET", `/v1/streams/${STREAM}/runs/${id}`);
  if (res.status !== 200) throw new Error(`GET run: ${res.status} ${res.text}`);
  return JSON.parse(res.text) as { status: string; files: { done: number; skipped: number; failed: number }; late: number };
}

/** The table has caught up with every commit: its snapshot records the last commit number. */
async function tableCaughtUp(): Promise<void> {
  const committed = (await api.stream(STREAM)).batches.committed;
  await pollUntil(
    async () => {
      const res = await api.request("GET", `/v1/streams/${STREAM}/table`);
      return res.status === 200 ? Number(JSON.parse(res.text).snapshot.summary["edge-dedup.commit-seq"]) : 0;
    },
    (seq) => seq === committed,
    60_000,
    250,
  );
}

/** DuckDB over the input files: one row per id, among rows not behind the 30-minute horizon of what came before them. */
async function oracle(): Promise<Event[]> {
  const db = await (await DuckDBInstance.create(":memory:")).connect();
  const reader = await db.runAndReadAll(`
    SELECT DISTINCT ON (event_id) event_id, company_id, amount, event_ts
    FROM read_json('${join(dir, "*.json")}', format = 'array', columns = {event_id: 'VARCHAR', company_id: 'VARCHAR', amount: 'DOUBLE', event_ts: 'VARCHAR'})
    WHERE event_ts::TIMESTAMPTZ >= TIMESTAMPTZ '${new Date(BASE - 60 * MINUTE).toISOString()}'
    ORDER BY event_id`);
  return reader.getRowObjectsJson() as unknown as Event[];
}

describe("the seed's exercise", () => {
  test("three runs over a growing folder, a kill mid-run: the Iceberg table equals the DuckDB oracle", async () => {
    let served: ServedBucket | null = null;
    try {
      // The table's location is where the independent reader will find it: R2 served over HTTP.
      served = await serveBucket({
        get: async (key) => {
          const res = await fetch(`${server.url}/__test/sink/${encodeURIComponent(key)}`, { headers: { authorization: `Bearer ${server.token}` } });
          return res.status === 200 ? new Uint8Array(await res.arrayBuffer()) : null;
        },
        put: async () => false,
        list: async () => [],
        delete: async () => {},
      });
      await api.putStream(STREAM, {
        key: ["event_id"],
        eventTime: "event_ts",
        watermarkDelay: "30 minutes",
        partitions: 4,
        schema: { event_id: "string", company_id: "string", amount: "double", event_ts: "timestamp" },
        table: { format: "iceberg", location: served.baseUri },
      });

      let counter = 0;
      const recent: Event[] = [];
      const next = () => ++counter;
      for (const run of [0, 1, 2]) {
        const files = makeRun(run, recent, next);
        for (const f of files) await upload(f.name, f.rows);
        // A re-upload of a file from the previous run, byte for byte: the same etag, nothing new.
        if (run > 0) {
          const again = `part-${String((run - 1) * FILES_PER_RUN + 3).padStart(4, "0")}.json`;
          const res = await api.request("PUT", `/__test/input/${encodeURIComponent(PREFIX + again)}`, { body: readFileSync(join(dir, again), "utf8") });
          expect(res.status).toBe(201);
        }
        const id = await runOnce();
        if (run === 2) {
          // Kill the server once some files of this run are in, then start it again on the same state.
          await pollUntil(
            () => runView(id),
            (v) => v.files.done >= 3,
            60_000,
            50,
          );
          await server.restart("SIGKILL");
        }
        const done = await pollUntil(
          () => runView(id),
          (v) => v.status !== "running",
          120_000,
          200,
        );
        expect(done.status).toBe("done");
        expect(done.files).toMatchObject({ done: FILES_PER_RUN, skipped: run * FILES_PER_RUN, failed: 0 });
        if (run > 0) expect(done.late).toBeGreaterThan(0);
        await tableCaughtUp();
      }

      const want = await oracle();
      expect(want.length).toBeGreaterThan(500);
      const byId = (rows: Record<string, unknown>[]) =>
        rows
          .map((r) => ({
            event_id: String(r.event_id),
            company_id: String(r.company_id),
            amount: Number(r.amount),
            event_ts: new Date(r.event_ts instanceof Date ? r.event_ts : Number(r.event_ts) / 1000 || String(r.event_ts)).toISOString(),
          }))
          .sort((a, b) => a.event_id.localeCompare(b.event_id));
      const table = await served.read(STREAM);
      expect(table.length, "rows in the table").toBe(want.length);
      expect(byId(table)).toEqual(byId(want as unknown as Record<string, unknown>[]));
      // The NDJSON output says the same.
      expect(byId(await api.output(STREAM))).toEqual(byId(want as unknown as Record<string, unknown>[]));
    } finally {
      await served?.close();
    }
  });
});

/**
 * File runs on a real `wrangler dev` (DESIGN §7, "Files, once each"): objects
 * put into the local INPUT bucket, a run over their prefix polled until done,
 * the server killed (SIGKILL of its process group) in the middle of a run and
 * started again on the same state: the run resumes from its alarm and the
 * output holds every distinct row exactly once. The objects go in through the
 * test-only PUT /__test/input/{key} (compiled only with __FAULTS__, like
 * src/instrument/faults.ts): the same R2 binding a producer's upload would fill.
 */
import { describe, expect, test } from "vitest";
import { pollUntil, useServer } from "./server";

const { server, api } = useServer({ faults: true });

const T = Date.UTC(2026, 0, 1);
const config = { key: ["id"], mode: "global", partitions: 4 };

interface RunView {
  id: string;
  status: "running" | "done" | "failed";
  files: { done: number; left: number; skipped: number; failed: number; replayed: number };
  input: number;
  emitted: number;
  duplicates: number;
  errors: { key: string; detail: string }[];
}

/** n objects under prefix, each 3 rows sharing one id with the next; returns the distinct ids. */
async function upload(prefix: string, n: number): Promise<Set<number>> {
  const ids = new Set<number>();
  for (let i = 0; i < n; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, n - i) }, async (_, j) => {
        const f = i + j;
        const rows = [f * 2, f * 2 + 1, f * 2 + 2].map((id) => ({ id, ts: T + id, file: f }));
        rows.forEach((r) => ids.add(r.id));
        const ndjson = f % 2 === 1;
        const key = `${prefix}part-${String(f).padStart(4, "0")}.${ndjson ? "ndjson" : "json"}`;
        const body = ndjson ? rows.map((r) => JSON.stringify(r)).join("\n") : JSON.stringify(rows);
        const res = await api.request("PUT", `/__test/input/${encodeURIComponent(key)}`, { body });
        if (res.status !== 201) throw new Error(`put ${key}: ${res.status} ${res.text}`);
      }),
    );
  }
  return ids;
}

async function startRun(stream: string, prefix: string): Promise<string> {
  const res = await api.request("POST", `/v1/streams/${stream}/runs`, {
    body: JSON.stringify({ prefix }),
    headers: { "content-type": "application/json" },
  });
  expect(res.status).toBe(202);
  return JSON.parse(res.text).id;
}

async function run(stream: string, id: string): Promise<RunView> {
  const res = await api.request("GET", `/v1/streams/${stream}/runs/${id}`);
  if (res.status !== 200) throw new Error(`GET run: ${res.status} ${res.text}`);
  return JSON.parse(res.text);
}

const untilDone = (stream: string, id: string) =>
  pollUntil(
    () => run(stream, id),
    (v) => v.status !== "running",
    120_000,
    200,
  );
const sorted = (s: Iterable<number>) => [...s].sort((a, b) => a - b);

describe("file runs on wrangler dev", () => {
  test("a run ingests a prefix once, a second run skips it, and a run killed half way finishes after the restart", async () => {
    await api.putStream("files", config);
    const first = await upload("batch-1/", 30);
    const id = await startRun("files", "batch-1/");
    const done = await untilDone("files", id);
    expect(done).toMatchObject({ status: "done", files: { done: 30, left: 0, skipped: 0, failed: 0 }, input: 90, emitted: first.size });
    expect(sorted((await api.output<{ id: number }>("files")).map((r) => r.id))).toEqual(sorted(first));

    const again = await untilDone("files", await startRun("files", "batch-1/"));
    expect(again).toMatchObject({ status: "done", files: { done: 0, skipped: 30 }, emitted: 0 });

    // A bigger prefix, and a crash in the middle of its run.
    const second = await upload("batch-2/", 240);
    const crashed = await startRun("files", "batch-2/");
    const midway = await pollUntil(
      () => run("files", crashed),
      (v) => v.files.done >= 10 || v.status !== "running",
      60_000,
      20,
    );
    expect(midway.status).toBe("running");
    await server.restart("SIGKILL");
    const after = await untilDone("files", crashed);
    expect(after).toMatchObject({ status: "done", files: { done: 240, left: 0, failed: 0 }, input: 720, errors: [] });
    expect(after.files.done).toBeGreaterThan(midway.files.done);

    const all = new Set([...first, ...second]);
    const out = (await api.output<{ id: number }>("files")).map((r) => r.id);
    expect(out).toHaveLength(all.size); // nothing doubled
    expect(sorted(out)).toEqual(sorted(all)); // nothing lost
    // One committed batch per object, however often the run met it.
    expect((await api.progress("files", 1000)).length).toBe(270);
  });
});

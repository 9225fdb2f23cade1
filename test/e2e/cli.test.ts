/**
 * `edge-dedup send` (src/cli, bin/edge-dedup.mjs) as a child process against a
 * real `wrangler dev`: the first run emits exactly the distinct ids, a re-run
 * over the same folder only replays, a new file sends only its own batches,
 * and injected failures (409 batch-in-flight with Retry-After, a 503 after the
 * batch was committed) are retried into exactly one commit per batch.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server as HttpServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import type { Summary } from "../../src/cli/summary.ts";
import { useServer } from "./server";

const { server, api } = useServer();
const BIN = fileURLToPath(new URL("../../bin/edge-dedup.mjs", import.meta.url));
const CLI_TIMEOUT_MS = 90_000;

const base = mkdtempSync(join(tmpdir(), "edge-dedup-cli-e2e-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in its own process, bounded; the token comes from the environment. */
function cli(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, EDGE_DEDUP_TOKEN: server.token, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: CLI_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const row = (id: string, n: number) => ({ id, n, note: `row ${n}` });

function write(dir: string, rel: string, text: string): void {
  mkdirSync(join(dir, rel, ".."), { recursive: true });
  writeFileSync(join(dir, rel), text);
}

/** A folder with duplicates inside files and across them, and a file that is not sent. Returns every id written. */
function makeFolder(dir: string): string[] {
  const ids: string[] = [];
  const rows = (list: number[], from: number) => list.map((k, i) => (ids.push(`e${k}`), row(`e${k}`, from + i)));
  // e0..e19 plus 5 copies of e0..e4: one JSON array, pretty-printed.
  write(dir, "2024-01.json", JSON.stringify(rows([...Array(20).keys(), 0, 1, 2, 3, 4], 0), null, 2));
  // e15..e34 (e15..e19 repeat the first file) and e20 twice.
  write(
    dir,
    "2024-02.ndjson",
    rows([...Array(20).keys()].map((i) => i + 15).concat([20]), 100)
      .map((r) => JSON.stringify(r))
      .join("\r\n") + "\n",
  );
  // e30..e39 (e30..e34 repeat the second file), in a subfolder, as one object per file too.
  write(
    dir,
    "deep/more.jsonl",
    rows(
      [...Array(10).keys()].map((i) => i + 30),
      200,
    )
      .map((r) => JSON.stringify(r))
      .join("\n"),
  );
  write(dir, "deep/one.json", JSON.stringify(rows([40], 300)[0]));
  write(dir, "README.txt", "not data");
  return ids;
}

const distinct = (ids: string[]) => [...new Set(ids)].sort();
const outputIds = async (stream: string) => (await api.output<{ id: string }>(stream)).map((r) => r.id);

function summaryOf(run: Run): Summary {
  expect(run.code, `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`).not.toBeNull();
  return JSON.parse(run.stdout) as Summary;
}

describe("edge-dedup send", () => {
  test("first run emits the distinct ids; a re-run replays everything; a new file sends only its batches", async () => {
    const stream = "cli-files";
    await api.putStream(stream, { key: ["id"], mode: "global", partitions: 4 });
    const dir = join(base, "files");
    const ids = makeFolder(dir);
    const args = ["send", dir, "--url", server.url, "--stream", stream, "--source", "files", "--batch-rows", "7", "--concurrency", "3"];

    // 1. Everything is new.
    const first = await cli([...args, "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const s1 = summaryOf(first);
    expect(s1.ok).toBe(true);
    expect(s1.files.map((f) => [f.path, f.batches, f.rows])).toEqual([
      ["2024-01.json", 4, 25],
      ["2024-02.ndjson", 3, 21],
      ["deep/more.jsonl", 2, 10],
      ["deep/one.json", 1, 1],
    ]);
    expect(s1.skipped).toEqual([{ rel: "README.txt", reason: "not .json, .ndjson or .jsonl" }]);
    expect(s1.totals).toEqual({
      files: 4,
      batches: 10,
      rows: ids.length,
      emitted: distinct(ids).length,
      duplicates: ids.length - distinct(ids).length,
      late: 0,
      rejected: 0,
      replayed: 0,
      failed: 0,
    });
    // not a terminal: plain progress lines on stderr, the last one complete
    expect(first.stderr.trim().split("\n").at(-1)).toMatch(/^edge-dedup: files 4\/4, rows 57\/57, [\d,]+ rows\/s$/);
    const out1 = await outputIds(stream);
    expect(out1.slice().sort()).toEqual(distinct(ids));
    const before = await api.snapshot(stream);
    expect(before.committed).toBe(10);

    // 2. The same folder again: every batch replays, nothing changes.
    const second = await cli([...args, "--json", "--quiet"]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toBe("");
    const s2 = summaryOf(second);
    // Replayed batches are not new output: their recorded counts are not added again (#15).
    expect(s2.totals).toEqual({ ...s1.totals, emitted: 0, duplicates: 0, replayed: 10 });
    expect(s2.files.map((f) => f.replayed)).toEqual(s1.files.map((f) => f.batches));
    expect(await api.snapshot(stream)).toEqual(before);

    // 3. A new file: only its batches are new; its copies of earlier ids are duplicates.
    const added = [38, 39, 40, 41, 42, 43, 44, 45, 41].map((k, i) => row(`e${k}`, 400 + i));
    write(dir, "2024-03.json", JSON.stringify(added));
    const third = await cli([...args, "--quiet"]);
    expect(third.code, third.stderr).toBe(0);
    const table = third.stdout.split("\n");
    // the table: 2024-03.json sorts between 2024-02.ndjson and deep/
    expect(table.map((l) => l.split(/\s+/)[0]).filter((f) => f.includes("."))).toEqual([
      "2024-01.json",
      "2024-02.ndjson",
      "2024-03.json",
      "deep/more.jsonl",
      "deep/one.json",
    ]);
    expect(table).toContain("  README.txt (not .json, .ndjson or .jsonl)");
    //                                   file           batches rows emitted dups late rej replayed failed
    expect(table.find((l) => l.startsWith("2024-03.json"))).toMatch(/^2024-03\.json\s+2\s+9\s+5\s+4\s+0\s+0\s+0\s+0$/);
    expect(table.find((l) => l.startsWith("2024-01.json"))).toMatch(/^2024-01\.json\s+4\s+25\s+0\s+0\s+0\s+0\s+4\s+0$/);
    expect(third.stdout).toContain("all 12 batches committed (10 replayed) to stream cli-files in");
    expect(third.stdout).toContain("  2 committed now (5 emitted, 4 duplicates, 0 late, 0 rejected)");
    // It waited, as a file run does, until the committed manifest held its commits.
    expect(third.stdout).toContain("  readable in /output and the committed manifest up to commit 12");
    const after = await api.snapshot(stream);
    expect(after.committed).toBe(12);
    expect(after.progress.slice(10).every((p) => p.batchId.startsWith("cli:"))).toBe(true);
    const out3 = await outputIds(stream);
    expect(out3.slice(0, out1.length)).toEqual(out1);
    expect(out3.slice().sort()).toEqual(distinct([...ids, ...added.map((r) => r.id)]));
  });

  test("409 batch-in-flight with Retry-After and a 503 after the commit are retried into one commit per batch", async () => {
    const stream = "cli-faults";
    await api.putStream(stream, { key: ["id"], mode: "global", partitions: 4 });
    const dir = join(base, "faults");
    const ids = makeFolder(dir);

    // A proxy in front of wrangler. The first request of each batch id fails:
    // even-numbered ids get a 409 batch-in-flight with Retry-After: 1 and are not
    // forwarded; odd-numbered ones are forwarded (and commit) but the client gets a 503.
    const attempts = new Map<string, number>();
    const order: string[] = [];
    const proxy: HttpServer = createServer(async (req, res) => {
      if (req.method === "GET") {
        // The wait for publication after sending (GET …/publication): passed through, not counted.
        const up = await fetch(server.url + req.url, { headers: pick(req, ["authorization"]) });
        res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" });
        return void res.end(await up.text());
      }
      const body = await readAll(req);
      const key = String(req.headers["idempotency-key"] ?? "");
      const n = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, n);
      if (n === 1) order.push(key);
      const forward = () =>
        fetch(server.url + req.url, {
          method: req.method,
          headers: pick(req, ["authorization", "content-type", "idempotency-key", "x-source"]),
          body: new Uint8Array(body),
          signal: AbortSignal.timeout(60_000),
        });
      const problem = (status: number, slug: string, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "application/problem+json", ...headers });
        res.end(JSON.stringify({ type: `https://edge-dedup.dev/problems/${slug}`, title: slug, status, detail: `injected ${slug}` }));
      };
      try {
        if (n === 1 && order.indexOf(key) % 2 === 0) return problem(409, "batch-in-flight", { "retry-after": "1" });
        const upstream = await forward();
        const text = await upstream.text();
        if (n === 1) return problem(503, "injected-unavailable");
        res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" });
        res.end(text);
      } catch (e) {
        res.writeHead(502).end(String(e));
      }
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      const { port } = proxy.address() as { port: number };
      const started = Date.now();
      const run = await cli(["send", dir, "--url", `http://127.0.0.1:${port}`, "--stream", stream, "--batch-rows", "7", "--concurrency", "4", "--json"]);
      expect(run.code, run.stderr).toBe(0);
      const s = summaryOf(run);
      expect(s.ok).toBe(true);
      expect(s.totals).toMatchObject({
        batches: 10,
        rows: ids.length,
        emitted: distinct(ids).length,
        duplicates: ids.length - distinct(ids).length,
        failed: 0,
      });
      // the batches whose first attempt committed behind a 503 came back as replays of this run's own
      // commits: counted as committed now (their rows are this run's output), not as replayed (#15)
      expect(s.totals.replayed).toBe(0);
      expect(attempts.size).toBe(10);
      expect([...attempts.values()].every((n) => n === 2)).toBe(true);
      expect(run.stderr).toMatch(/HTTP 409 batch-in-flight: injected batch-in-flight; attempt 2 in 1\.0 s/);
      expect(run.stderr).toMatch(/HTTP 503 injected-unavailable/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000); // Retry-After was honoured
      expect(s.published).toMatchObject({ commitSeq: 10, caughtUp: true });

      const progress = await api.progress(stream);
      expect(progress.map((p) => p.batchId).sort()).toEqual([...attempts.keys()].sort()); // each batch committed once
      const out = await outputIds(stream);
      expect(out.slice().sort()).toEqual(distinct(ids));
    } finally {
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  test("Spark's output: gzipped part files are sent, its bookkeeping listed (exit 0); a part it cannot read fails the run once the rest is sent", async () => {
    const stream = "cli-spark";
    await api.putStream(stream, { key: ["id"], mode: "global", partitions: 2 });
    const dir = join(base, "spark");
    const lines = (list: number[]) => list.map((k) => JSON.stringify(row(`s${k}`, k))).join("\n") + "\n";
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "part-00000-u-c000.json.gz"), gzipSync(lines([0, 1, 2, 1])));
    writeFileSync(join(dir, "part-00001-u-c000.json"), lines([3, 4]));
    mkdirSync(join(dir, "day=2"));
    writeFileSync(join(dir, "day=2/part-00002-u-c000.jsonl.gz"), gzipSync(lines([4, 5])));
    write(dir, ".part-00000-u-c000.json.gz.crc", "crc");
    write(dir, "_SUCCESS", "");
    write(dir, "_spark_metadata/0", "v1\n{}");
    write(dir, "_spark_metadata/1", "v1\n{}");
    const args = ["send", dir, "--url", server.url, "--stream", stream, "--json", "--quiet"];

    const first = await cli(args);
    expect(first.code, first.stderr).toBe(0);
    const s1 = summaryOf(first);
    expect(s1.files.map((f) => [f.path, f.rows, f.emitted, f.duplicates])).toEqual([
      ["day=2/part-00002-u-c000.jsonl.gz", 2, 2, 0],
      ["part-00000-u-c000.json.gz", 4, 3, 1],
      ["part-00001-u-c000.json", 2, 1, 1],
    ]);
    expect(s1.skipped).toEqual([
      { rel: ".part-00000-u-c000.json.gz.crc", reason: 'Spark bookkeeping: the name starts with "."' },
      { rel: "_SUCCESS", reason: 'Spark bookkeeping: the name starts with "_"' },
      { rel: "_spark_metadata/", reason: 'Spark bookkeeping: the name starts with "_"', files: 2 },
    ]);
    expect((await outputIds(stream)).sort()).toEqual(["s0", "s1", "s2", "s3", "s4", "s5"]);

    // Spark wrote with compression=bzip2 this time: not read, so the run fails, and says which file and why.
    writeFileSync(join(dir, "part-00003-u-c000.json.bz2"), "BZh91AY&SY");
    writeFileSync(join(dir, "part-00004-u-c000.json.gz"), gzipSync(lines([6])));
    const second = await cli(args);
    expect(second.code, second.stderr).toBe(1);
    const s2 = summaryOf(second);
    expect(s2.ok).toBe(false);
    expect(s2.totals).toMatchObject({ files: 4, batches: 4, replayed: 3, emitted: 1, failed: 0 });
    expect(s2.skipped.filter((k) => k.data)).toEqual([
      { rel: "part-00003-u-c000.json.bz2", reason: ".json compressed as .bz2: only gzip (.gz) is read", data: true },
    ]);
    expect(s2.advice).toEqual([expect.stringMatching(/^1 file looks like data this command cannot read/)]);
    expect((await outputIds(stream)).sort()).toEqual(["s0", "s1", "s2", "s3", "s4", "s5", "s6"]);
  });

  test("a failing batch is reported with the problem's detail and the exit code is 1", async () => {
    const dir = join(base, "missing-stream");
    write(dir, "a.ndjson", '{"id":"x"}\n');
    const run = await cli(["send", dir, "--url", server.url, "--stream", "no-such-stream", "--json", "--quiet"]);
    expect(run.code).toBe(1);
    const s = summaryOf(run);
    expect(s.ok).toBe(false);
    expect(s.files[0].errors[0]).toMatch(/HTTP 404 not-found: stream "no-such-stream" does not exist/);
  });
});

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function pick(req: IncomingMessage, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = req.headers[n];
    if (typeof v === "string") out[n] = v;
  }
  return out;
}

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import { main } from "../../../src/cli/main.ts";
import { bar, createProgress, describeProgress } from "../../../src/cli/progress.ts";
import { SKIPPED_SHOWN, type Summary } from "../../../src/cli/summary.ts";

const base = mkdtempSync(join(tmpdir(), "edge-dedup-main-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const dir = join(base, "in");
mkdirSync(join(dir, "sub"), { recursive: true });
writeFileSync(join(dir, "a.json"), JSON.stringify([{ id: 1 }, { id: 2 }, { id: 1 }]));
writeFileSync(join(dir, "sub", "b.ndjson"), '{"id":3}\n{"id":2}\n');
writeFileSync(join(dir, "readme.md"), "hi");

/** A fake service: dedups on `id` over the whole run, replays known batch ids, answers 503 to the ids in `flaky` once. */
function fakeService(opts: { status?: number; flaky?: boolean } = {}) {
  const seen = new Set<unknown>();
  const committed = new Map<string, string>();
  const failedOnce = new Set<string>();
  let calls = 0;
  let lookedUp = 0;
  const fetch = (async (url: string, init: RequestInit) => {
    // The wait after sending: the manifest catches up one look after the first.
    if (init.method === "GET" && url.endsWith("/publication")) {
      const n = committed.size;
      return new Response(JSON.stringify({ stream: "s", committed: n, output: n, manifest: lookedUp++ === 0 ? 0 : n, table: null, snapshot: null }), {
        status: 200,
      });
    }
    calls++;
    const h = init.headers as Record<string, string>;
    if (opts.status)
      return new Response(JSON.stringify({ type: "https://edge-dedup.dev/problems/x", status: opts.status, detail: "nope" }), { status: opts.status });
    const id = h["idempotency-key"];
    if (opts.flaky && !failedOnce.has(id)) {
      failedOnce.add(id);
      return new Response("{}", { status: 503, headers: { "retry-after": "0" } });
    }
    const prior = committed.get(id);
    if (prior) return new Response(JSON.stringify({ ...JSON.parse(prior), replayed: true }), { status: 200 });
    const rows = Buffer.from(init.body as Uint8Array)
      .toString("utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    let emitted = 0;
    for (const r of rows) if (!seen.has(r.id)) seen.add(r.id), emitted++;
    const out = JSON.stringify({ batchId: id, replayed: false, input: rows.length, emitted, duplicates: rows.length - emitted, late: 0, rejected: [] });
    committed.set(id, out);
    return new Response(out, { status: 200 });
  }) as typeof globalThis.fetch;
  return { fetch, calls: () => calls, lookups: () => lookedUp };
}

async function run(args: string[], service: ReturnType<typeof fakeService>, env: Record<string, string> = { EDGE_DEDUP_TOKEN: "t" }) {
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), isTTY: false },
    env,
    deps: { fetch: service.fetch, sleep: async () => {} },
  });
  return { code, stdout, stderr };
}

const SEND = ["send", dir, "--url", "http://127.0.0.1:9", "--stream", "s", "--batch-rows", "2"];

describe("main", () => {
  test("sends every file, sums per file; a re-run replays every batch and counts nothing new", async () => {
    const svc = fakeService();
    const first = await run([...SEND, "--json"], svc);
    expect(first.code).toBe(0);
    const s = JSON.parse(first.stdout) as Summary;
    expect(s.files.map((f) => [f.path, f.batches, f.rows, f.emitted, f.duplicates, f.replayed, f.failed])).toEqual([
      ["a.json", 2, 3, 2, 1, 0, 0],
      ["sub/b.ndjson", 1, 2, 1, 1, 0, 0],
    ]);
    expect(s.skipped).toEqual([{ rel: "readme.md", reason: "not .json, .ndjson or .jsonl" }]);
    expect(s.totals).toMatchObject({ files: 2, batches: 3, rows: 5, emitted: 3, duplicates: 2, replayed: 0, failed: 0 });
    expect(first.stderr).toMatch(/^edge-dedup: files 2\/2, rows 5\/5, [\d,]+ rows\/s\n$/m);

    const second = await run([...SEND, "--json", "--quiet"], svc);
    const t = JSON.parse(second.stdout) as Summary;
    expect(second.stderr).toBe("");
    // The replayed batches' recorded counts are not new output (#15: "emitted 60" for a run that sent nothing new).
    expect(t.totals).toEqual({ ...s.totals, emitted: 0, duplicates: 0, replayed: 3 });
    expect(t.files.map((f) => [f.path, f.emitted, f.replayed])).toEqual([
      ["a.json", 0, 2],
      ["sub/b.ndjson", 0, 1],
    ]);
    expect(svc.calls()).toBe(6);
    // Each run waited until the manifest held its commits, and said so.
    expect(s.published).toMatchObject({ commitSeq: 3, manifest: 3, table: null, caughtUp: true });
    expect(first.stderr).toMatch(/waiting until the committed manifest hold commit 3/);
    expect(t.published).toMatchObject({ commitSeq: 3, caughtUp: true });
  });

  test("the table's last lines separate batches committed now from replayed ones; --no-wait skips the wait", async () => {
    const svc = fakeService();
    await run([...SEND, "--quiet"], svc);
    const again = await run([...SEND, "--quiet", "--no-wait"], svc);
    expect(again.stdout).toContain("all 3 batches committed (3 replayed) to stream s in");
    expect(again.stdout).toContain("  0 committed now (0 emitted, 0 duplicates, 0 late, 0 rejected)");
    expect(again.stdout).toContain("  3 replayed (committed by an earlier run: nothing new, not counted again)");
    expect(again.stdout).not.toMatch(/readable in/);
    expect(svc.lookups()).toBe(2);
  });

  test("the table lists files, totals, skipped files and the outcome", async () => {
    const { code, stdout } = await run([...SEND, "--quiet"], fakeService());
    expect(code).toBe(0);
    const lines = stdout.split("\n");
    expect(lines[0]).toMatch(/^file\s+batches\s+rows\s+emitted\s+duplicates\s+late\s+rejected\s+replayed\s+failed$/);
    expect(lines.find((l) => l.startsWith("a.json"))).toMatch(/^a\.json\s+2\s+3\s+2\s+1\s+0\s+0\s+0\s+0$/);
    expect(lines.find((l) => l.startsWith("total"))).toMatch(/^total \(2 files\)\s+3\s+5\s+3\s+2\s+0\s+0\s+0\s+0$/);
    expect(stdout).toContain("  readme.md (not .json, .ndjson or .jsonl)");
    expect(stdout).toMatch(/all 3 batches committed \(0 replayed\) to stream s in/);
  });

  test("retried failures still end in one commit per batch; retries are noted on stderr", async () => {
    const svc = fakeService({ flaky: true });
    const { code, stdout, stderr } = await run([...SEND, "--json"], svc);
    expect(code).toBe(0);
    expect(JSON.parse(stdout).totals).toMatchObject({ batches: 3, emitted: 3, replayed: 0, failed: 0 });
    expect(svc.calls()).toBe(6);
    expect(stderr).toMatch(/a\.json batch 0: HTTP 503; attempt 2 in 0\.\d s/);
  });

  test("a fatal answer stops the run: exit 1, the rest counted as not sent", async () => {
    const svc = fakeService({ status: 404 });
    const { code, stdout } = await run([...SEND, "--json", "--concurrency", "1", "--quiet"], svc);
    expect(code).toBe(1);
    const s = JSON.parse(stdout) as Summary;
    expect(svc.calls()).toBe(1);
    expect(s.ok).toBe(false);
    expect(s.totals.failed).toBe(3);
    expect(s.files[0].errors[0]).toMatch(/^batch 0 \(cli:[0-9a-f]{16}:0:[0-9a-f]{16}\): HTTP 404 x: nope$/);
    expect(s.files[0].errors[1]).toMatch(/^1 batch not sent/);
    expect(s.advice).toEqual([expect.stringMatching(/^stream "s" does not exist there \(HTTP 404\)/)]);
  });

  test("the advice fits the error: a 403 is not fixed by running again; a 503 may be", async () => {
    const refused = await run([...SEND, "--json", "--quiet"], fakeService({ status: 403 }));
    const s = JSON.parse(refused.stdout) as Summary;
    expect(s.advice).toHaveLength(1);
    expect(s.advice[0]).toMatch(/refused the credential \(HTTP 403\).*check --token \/ EDGE_DEDUP_TOKEN/);
    const table = await run([...SEND, "--quiet"], fakeService({ status: 403 }));
    expect(table.stdout).not.toMatch(/run the same command again to retry/);
    const busy = await run([...SEND, "--json", "--quiet", "--max-attempts", "1"], fakeService({ status: 503 }));
    expect((JSON.parse(busy.stdout) as Summary).advice).toEqual([
      expect.stringMatching(/^3 batches failed for a reason that may pass: run the same command again/),
    ]);
    const bad = await run([...SEND, "--json", "--quiet"], fakeService({ status: 422 }));
    expect((JSON.parse(bad.stdout) as Summary).advice).toEqual([expect.stringMatching(/^3 batches were refused as sent/)]);
  });

  test("an unreadable file fails alone; the others are sent", async () => {
    const d = join(base, "bad");
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "bad.json"), "[1,");
    writeFileSync(join(d, "good.jsonl"), '{"id":1}\n');
    const { code, stdout } = await run(["send", d, "--url", "http://x", "--stream", "s", "--json", "--quiet"], fakeService());
    expect(code).toBe(1);
    const s = JSON.parse(stdout) as Summary;
    expect(s.files.map((f) => [f.path, f.failed, f.emitted])).toEqual([
      ["bad.json", 1, 0],
      ["good.jsonl", 0, 1],
    ]);
    expect(s.files[0].errors[0]).toMatch(/^line 1 is not valid JSON/);
  });

  test("a .gz file is gunzipped and sent like the plain one (same rows, same bodies); one that is not gzip fails alone", async () => {
    const d = join(base, "gz");
    mkdirSync(d, { recursive: true });
    const rows = '{"id":1}\n{"id":2}\n{"id":1}\n';
    writeFileSync(join(d, "part-00000.json.gz"), gzipSync(rows));
    writeFileSync(join(d, "part-00001.ndjson.gz"), gzipSync('{"id":3}\n'));
    writeFileSync(join(d, "part-00002.jsonl.gz"), "not gzip");
    const bodies: string[] = [];
    const svc = fakeService();
    const recording = {
      ...svc,
      fetch: (async (url: string, init: RequestInit) => {
        if (init.method !== "GET") bodies.push(Buffer.from(init.body as Uint8Array).toString("utf8"));
        return svc.fetch(url, init);
      }) as typeof fetch,
    };
    const { code, stdout } = await run(["send", d, "--url", "http://x", "--stream", "s", "--json", "--quiet"], recording);
    expect(code).toBe(1);
    const s = JSON.parse(stdout) as Summary;
    expect(s.files.map((f) => [f.path, f.rows, f.emitted, f.duplicates, f.failed])).toEqual([
      ["part-00000.json.gz", 3, 2, 1, 0],
      ["part-00001.ndjson.gz", 1, 1, 0, 0],
      ["part-00002.jsonl.gz", 0, 0, 0, 1],
    ]);
    expect(s.files[2].errors).toEqual(["the name ends in .gz but the file is not valid gzip"]);
    expect(bodies).toEqual([rows, '{"id":3}\n']);
  });

  test("a file that is not UTF-8 fails alone, as the service refuses it", async () => {
    const d = join(base, "latin1");
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "a.jsonl"), Buffer.from('{"name":"caf\xe9"}\n', "latin1"));
    const { code, stdout } = await run(["send", d, "--url", "http://x", "--stream", "s", "--json", "--quiet"], fakeService());
    expect(code).toBe(1);
    expect((JSON.parse(stdout) as Summary).files[0].errors).toEqual(["the file is not valid UTF-8"]);
  });

  test("Spark's bookkeeping is listed and does not fail the run; data it cannot read is named, the rest is sent, and the run exits 1", async () => {
    const d = join(base, "spark");
    mkdirSync(join(d, "_spark_metadata"), { recursive: true });
    writeFileSync(join(d, "part-00000-a-c000.json.gz"), gzipSync('{"id":1}\n'));
    writeFileSync(join(d, ".part-00000-a-c000.json.gz.crc"), "crc");
    writeFileSync(join(d, "_SUCCESS"), "");
    writeFileSync(join(d, "_spark_metadata", "0"), "v1");
    const clean = await run(["send", d, "--url", "http://x", "--stream", "s", "--quiet"], fakeService());
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('skipped 3 files:\n  .part-00000-a-c000.json.gz.crc (Spark bookkeeping: the name starts with ".")\n');
    expect(clean.stdout).toContain('  _spark_metadata/ (Spark bookkeeping: the name starts with "_"; 1 file in it)');
    expect(clean.stdout).toMatch(/all 1 batches committed \(0 replayed\) to stream s in [\d.]+ s\n/);

    writeFileSync(join(d, "part-00001-a-c000.json.bz2"), "BZh");
    const svc = fakeService();
    const dirty = await run(["send", d, "--url", "http://x", "--stream", "s", "--quiet"], svc);
    expect(dirty.code).toBe(1);
    expect(dirty.stdout).toContain(
      "not read: 1 file of data this command cannot read, so the run fails:\n  part-00001-a-c000.json.bz2 (.json compressed as .bz2: only gzip (.gz) is read)\n",
    );
    expect(dirty.stdout).toMatch(/all 1 batches committed \(0 replayed\) to stream s in [\d.]+ s; 1 file of data not read\n/);
    expect(dirty.stdout).toMatch(/  1 file looks like data this command cannot read \(see "not read"\), so nothing of it was sent: decompress it/);
    expect(svc.calls()).toBe(1);
    const json = JSON.parse((await run(["send", d, "--url", "http://x", "--stream", "s", "--quiet", "--json"], fakeService())).stdout) as Summary;
    expect(json.ok).toBe(false);
    expect(json.skipped.filter((k) => k.data)).toEqual([
      { rel: "part-00001-a-c000.json.bz2", reason: ".json compressed as .bz2: only gzip (.gz) is read", data: true },
    ]);
  });

  test("the table names at most SKIPPED_SHOWN harmless skips and counts the rest", async () => {
    const d = join(base, "many");
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "a.json"), '{"id":1}');
    for (let i = 0; i < SKIPPED_SHOWN + 5; i++) writeFileSync(join(d, `.part-${String(i).padStart(5, "0")}.crc`), "");
    const { code, stdout } = await run(["send", d, "--url", "http://x", "--stream", "s", "--quiet"], fakeService());
    expect(code).toBe(0);
    expect(stdout).toContain(`skipped ${SKIPPED_SHOWN + 5} files:`);
    expect(stdout.split("\n").filter((l) => l.endsWith('.crc (Spark bookkeeping: the name starts with ".")'))).toHaveLength(SKIPPED_SHOWN);
    expect(stdout).toContain("  … and 5 more (--json lists every one)");
  });

  test("usage errors exit 2 without sending", async () => {
    const svc = fakeService();
    expect((await run(["send", dir, "--stream", "s"], svc)).code).toBe(2);
    expect((await run(["send", dir, "--url", "http://x", "--stream", "s"], svc, {})).stderr).toMatch(/no token/);
    expect((await run(["send", dir, "--url", "ftp://x", "--stream", "s"], svc)).code).toBe(2);
    expect((await run(["send", dir, "--url", "http://x", "--stream", "s", "--batch-rows", "0"], svc)).stderr).toMatch(/--batch-rows/);
    expect((await run(["send", dir, "--url", "http://x", "--stream", "s", "--bogus"], svc)).code).toBe(2);
    expect((await run(["push", dir], svc)).stderr).toMatch(/unknown command "push"/);
    expect((await run(["send", join(base, "nope"), "--url", "http://x", "--stream", "s"], svc)).code).toBe(2);
    expect(svc.calls()).toBe(0);
    const help = await run(["--help"], svc);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: edge-dedup send/);
  });

  test("progress text and bar", () => {
    expect(describeProgress({ filesDone: 1, filesTotal: 3, rowsDone: 1500, rowsTotal: 4000, batchesFailed: 2 }, 1000)).toBe(
      "files 1/3, rows 1,500/4,000, 1,500 rows/s, 2 failed",
    );
    expect(bar(0.5, 10)).toBe("[#####.....]  50%");
    expect(bar(2, 4)).toBe("[####] 100%");
  });

  test("on a terminal: a bar redrawn in place at most every 100 ms; notes go above it", () => {
    let t = 0;
    let out = "";
    const state = { filesDone: 0, filesTotal: 2, rowsDone: 0, rowsTotal: 100, batchesFailed: 0 };
    const p = createProgress(state, { write: (s: string) => (out += s), isTTY: true, columns: 200 }, { quiet: false, now: () => t });
    t = 1000;
    state.rowsDone = 50;
    p.update();
    expect(out).toBe("\r\x1b[2K[############............]  50% files 0/2, rows 50/100, 50 rows/s");
    t = 1050;
    p.update(); // too soon: not redrawn
    expect(out.split("\r").length).toBe(2);
    p.note("a.json batch 1: HTTP 503; attempt 2 in 0.3 s");
    expect(out).toContain("\r\x1b[2Ka.json batch 1: HTTP 503; attempt 2 in 0.3 s\n\r\x1b[2K[");
    state.rowsDone = 100;
    state.filesDone = 2;
    p.finish();
    expect(out.endsWith("[########################] 100% files 2/2, rows 100/100, 95 rows/s\n")).toBe(true);
  });

  test("elsewhere: a plain line at the interval; --quiet: nothing", () => {
    let t = 0;
    let out = "";
    const state = { filesDone: 1, filesTotal: 2, rowsDone: 10, rowsTotal: 20, batchesFailed: 0 };
    const p = createProgress(state, { write: (s: string) => (out += s), isTTY: false }, { quiet: false, now: () => t, intervalMs: 5000 });
    t = 4000;
    p.update();
    expect(out).toBe("");
    t = 5000;
    p.update();
    expect(out).toBe("edge-dedup: files 1/2, rows 10/20, 2 rows/s\n");
    const q = createProgress(state, { write: (s: string) => (out += s), isTTY: true }, { quiet: true });
    q.update();
    q.note("x");
    q.finish();
    expect(out).toBe("edge-dedup: files 1/2, rows 10/20, 2 rows/s\n");
  });
});

describe("bin/edge-dedup.mjs", () => {
  const bin = fileURLToPath(new URL("../../../bin/edge-dedup.mjs", import.meta.url));
  test("runs on this Node with no flags", () => {
    const r = spawnSync(process.execPath, [bin, "--help"], { encoding: "utf8", timeout: 20_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: edge-dedup send/);
    expect(r.stderr).toBe("");
  });

  test("`npx edge-dedup --help` runs under the machine's own Node (Node 20 here), through the Node 22 bootstrap when it must", () => {
    // The PATH without the Node 22 that scripts/node22.mjs put first for this test run: npm's own Node.
    const PATH = (process.env.PATH ?? "")
      .split(":")
      .filter((d) => !d.includes("edge-dedup-node22"))
      .join(":");
    const machine = spawnSync("node", ["--version"], { encoding: "utf8", env: { ...process.env, PATH } }).stdout.trim();
    const r = spawnSync("npx", ["--no-install", "edge-dedup", "--help"], {
      cwd: fileURLToPath(new URL("../../..", import.meta.url)),
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, PATH },
    });
    expect(r.status, `node ${machine}: ${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^Usage: edge-dedup send/);
    expect(r.stderr).not.toMatch(/bad option/);
    const advise = spawnSync("npx", ["--no-install", "edge-dedup", "advise", "--help"], {
      cwd: fileURLToPath(new URL("../../..", import.meta.url)),
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, PATH },
    });
    expect(advise.status, advise.stderr).toBe(0);
  });

  test("without type stripping (Node 22.12–22.17) it runs itself again with --experimental-strip-types", () => {
    const r = spawnSync(process.execPath, ["--no-experimental-strip-types", bin, "send"], { encoding: "utf8", timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^edge-dedup: name at least one folder or file/);
  });
});

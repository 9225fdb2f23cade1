/**
 * `npm run bench:micro`: the performance claims behind edge-dedup's design, measured
 * as RATIOS of two workloads run side by side in one process on one machine
 * (absolute timings on a small, shared machine are noise; ratios mostly are not).
 *
 *   1. Partition SQL strategy: one json_each lookup + one json_each insert per
 *      sub-batch (src/partition/partition.ts) vs one SELECT and one INSERT per row, in a
 *      bench-only SQLite Durable Object (bench/sql-worker.ts, bench/wrangler.toml).
 *   2. End-to-end ingest through the real Worker: batches of 1, 100 and 1,000 rows.
 *   3. Replaying committed batches (same Idempotency-Key and body) vs ingesting them.
 *   4. 4 concurrent producers vs 1 producer, same rows, batches of 500.
 *
 * Each `wrangler dev` (bench/harness.ts) runs on 127.0.0.1 from a snapshot of the code in a
 * temporary directory (so someone saving a file in src/ cannot reload the
 * Worker mid-run), in its own process group, killed at the end, on error and
 * on SIGINT/SIGTERM. Every loop is bounded in count and time. Nothing is written
 * outside the temporary directories; results are printed only.
 *
 * Exit code: 1 when the bench fails or a measured result is incorrect (counts
 * that do not match the data sent). Ratio verdicts are printed as PASS/WARN; set
 * BENCH_STRICT=1 to turn a WARN into exit code 1 too.
 *
 * The comparison with a Redis script and a minimal Worker is `npm run bench`
 * (bench/run.ts); both share bench/harness.ts.
 */
import { join } from "node:path";
import { rng } from "../test/support/rng.ts";
import { BENCH_DIR, fmt, PROJECT_FILES, http, httpJson, killEverything, median, ROOT, startWrangler, table } from "./harness.ts";

const TOKEN = "bench-token";
/** The whole bench is aborted past this; each part also has its own budget. */
const TOTAL_BUDGET_MS = 240_000;
const STRICT = process.env.BENCH_STRICT === "1";

const HOUR = 3_600_000;

// ---------------------------------------------------------------------------
// Sizes. Chosen so the whole bench takes about 2 minutes on a 2-core machine.

const SQL = { batches: 40, rowsPerBatch: 500, reps: 9 };
const INGEST = { rows: 6_000, duplicateShare: 0.2, batch1MaxRequests: 300, rounds: 3 };
const REPLAY = { batches: 50, rowsPerBatch: 1_000 };
const CONCURRENCY = { rows: 12_000, rowsPerBatch: 500, producers: 4, rounds: 6 };

interface Verdict {
  name: string;
  ratio: number;
  pass: boolean;
  text: string;
}
const verdicts: Verdict[] = [];
const failures: string[] = [];

function verdict(name: string, ratio: number, goal: number, text: string): void {
  const pass = ratio >= goal;
  verdicts.push({ name, ratio, pass, text });
  console.log(`  ${pass ? "PASS" : "WARN"} ${name}: ${fmt(ratio, 2)}× (goal ≥ ${goal}×) ${text}`);
}

/** A correctness check: a failed one makes the bench exit 1. */
function check(ok: boolean, what: string): void {
  if (!ok) {
    failures.push(what);
    console.log(`  INCORRECT: ${what}`);
  }
}

const benchStart = Date.now();
function budget(part: string, ms: number): () => void {
  const deadline = Date.now() + ms;
  return () => {
    if (Date.now() > deadline) throw new Error(`${part}: exceeded its time budget of ${ms / 1000} s`);
    if (Date.now() - benchStart > TOTAL_BUDGET_MS) throw new Error(`the bench exceeded its total budget of ${TOTAL_BUDGET_MS / 1000} s`);
  };
}

// ---------------------------------------------------------------------------
// 1. Partition SQL strategy

interface SqlRun {
  strategy: string;
  found: number;
  inserted: number;
  rows: number;
}

async function benchSql(): Promise<void> {
  console.log(`\n1. Partition SQL strategy: ${SQL.batches} batches × ${SQL.rowsPerBatch} keys, half already stored, one transaction per batch`);
  const server = await startWrangler({
    name: "sql-worker",
    files: { "sql-worker.ts": join(BENCH_DIR, "sql-worker.ts"), "wrangler.toml": join(BENCH_DIR, "wrangler.toml") },
    ready: async (url) => (await http("GET", `${url}/ping`)).text === "edge-dedup-sql-bench",
  });
  try {
    const over = budget("SQL strategy", 60_000);
    const q = `batches=${SQL.batches}&n=${SQL.rowsPerBatch}`;
    const half = Math.floor(SQL.rowsPerBatch / 2);
    const expected = { found: SQL.batches * half, inserted: SQL.batches * (SQL.rowsPerBatch - half) };

    // Warm-up (not timed): the isolate, both code paths and SQLite.
    for (const strategy of ["json", "row"]) {
      await httpJson("POST", `${server.url}/setup?do=warm-${strategy}&${q}`);
      await httpJson("POST", `${server.url}/run?do=warm-${strategy}&strategy=${strategy}&${q}`);
    }
    const noop: number[] = [];
    for (let i = 0; i < 10; i++) noop.push((await http("GET", `${server.url}/noop?do=warm-json`)).ms);

    // Alternating ABBA order, each run on a fresh object set up (untimed) just before.
    const times: Record<string, number[]> = { json: [], row: [] };
    for (let rep = 0; rep < SQL.reps; rep++) {
      over();
      const order = rep % 2 === 0 ? ["json", "row"] : ["row", "json"];
      for (const strategy of order) {
        const name = `r${rep}-${strategy}`;
        const setup = await httpJson<{ rows: number }>("POST", `${server.url}/setup?do=${name}&${q}`);
        check(setup.rows === SQL.batches * half, `sql setup stored ${setup.rows} keys, expected ${SQL.batches * half}`);
        const r = await httpJson<SqlRun>("POST", `${server.url}/run?do=${name}&strategy=${strategy}&${q}`);
        check(
          r.found === expected.found && r.inserted === expected.inserted && r.rows === expected.found + expected.inserted,
          `sql ${strategy}: found ${r.found}, inserted ${r.inserted}, rows ${r.rows}; expected ${expected.found}, ${expected.inserted}, ${expected.found + expected.inserted}`,
        );
        times[strategy].push(r._ms);
      }
    }
    const keys = SQL.batches * SQL.rowsPerBatch;
    const rtt = median(noop);
    const rowsOf = (s: string) => [
      s === "json" ? "json_each (src/partition/partition.ts)" : "one statement per row",
      fmt(median(times[s]), 1),
      fmt(Math.min(...times[s]), 1),
      fmt(Math.max(...times[s]), 1),
      fmt(keys / ((median(times[s]) - rtt) / 1000)),
    ];
    table(["strategy", "median ms", "min ms", "max ms", "keys/s (net of RTT)"], [rowsOf("json"), rowsOf("row")]);
    console.log(`  (${SQL.reps} runs each, alternating; no-op round trip to the object: median ${fmt(rtt, 1)} ms)`);
    const ratio = median(times.row) / median(times.json);
    const net = (median(times.row) - rtt) / (median(times.json) - rtt);
    verdict("per-row / json_each time", ratio, 2, `(net of round trip: ${fmt(net, 2)}×; the design cites ~3×)`);
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------
// Workload for the real Worker

interface Event {
  id: string;
  ts: number;
  v: number;
}

/**
 * `total` rows, about `duplicateShare` of them repeating an id seen in the last
 * 500 rows; event times increase 100 ms per row from two hours ago, so no row is
 * late (the watermark trails by one hour) and none is in the future.
 */
function workload(prefix: string, total: number, duplicateShare: number, seed: number): { rows: Event[]; distinct: number } {
  const random = rng(seed);
  const base = Date.now() - 2 * HOUR;
  const rows: Event[] = [];
  const ids: string[] = [];
  for (let i = 0; i < total; i++) {
    let id: string;
    if (ids.length > 0 && random() < duplicateShare) {
      id = ids[Math.max(0, ids.length - 1 - Math.floor(random() * 500))];
    } else {
      id = `${prefix}-${i}`;
      ids.push(id);
    }
    rows.push({ id, ts: base + i * 100, v: i });
  }
  return { rows, distinct: ids.length };
}

function chunks<T>(xs: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}

interface Outcome {
  batchId: string;
  source: string;
  replayed: boolean;
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: unknown[];
}

class Api {
  readonly url: string;
  constructor(url: string) {
    this.url = url;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...extra };
  }

  async createStream(name: string): Promise<void> {
    const body = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 8 };
    await httpJson("PUT", `${this.url}/v1/streams/${name}`, { body: JSON.stringify(body), headers: this.headers() });
  }

  async ingest(name: string, body: string, opts: { batchId?: string; source?: string } = {}): Promise<Outcome & { _ms: number }> {
    const extra: Record<string, string> = {};
    if (opts.batchId) extra["idempotency-key"] = opts.batchId;
    if (opts.source) extra["x-source"] = opts.source;
    return httpJson<Outcome>("POST", `${this.url}/v1/streams/${name}/events`, { body, headers: this.headers(extra) });
  }

  async stream(name: string): Promise<{ state: { rows: number }; batches: { committed: number }; _ms: number }> {
    return httpJson("GET", `${this.url}/v1/streams/${name}`, { headers: this.headers() });
  }
}

interface Totals {
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
  batches: number;
}

const emptyTotals = (): Totals => ({ input: 0, emitted: 0, duplicates: 0, late: 0, rejected: 0, batches: 0 });
function add(t: Totals, o: Outcome): void {
  t.input += o.input;
  t.emitted += o.emitted;
  t.duplicates += o.duplicates;
  t.late += o.late;
  t.rejected += o.rejected.length;
  t.batches++;
}

/** The outcomes add up to the data sent, and the stream agrees. */
async function verifyRun(api: Api, stream: string, label: string, t: Totals, sent: number, distinct: number, batches: number): Promise<void> {
  check(
    t.input === sent && t.emitted === distinct && t.duplicates === sent - distinct && t.late === 0 && t.rejected === 0 && t.batches === batches,
    `${label}: input ${t.input}/${sent}, emitted ${t.emitted}/${distinct} distinct, duplicates ${t.duplicates}/${sent - distinct}, late ${t.late}, rejected ${t.rejected}, batches ${t.batches}/${batches}`,
  );
  const info = await api.stream(stream);
  check(info.state.rows === distinct, `${label}: stream state holds ${info.state.rows} keys, expected ${distinct}`);
  check(info.batches.committed === batches, `${label}: ${info.batches.committed} batches committed, expected ${batches}`);
}

let streamSeq = 0;
const freshStream = (label: string) => `bench-${label}-${Date.now().toString(36)}-${streamSeq++}`;

/** Sequentially ingests `rows` in batches of `size` into a fresh stream; returns rows/s. */
async function ingestRun(
  api: Api,
  label: string,
  rows: Event[],
  distinct: number,
  size: number,
  over: () => void,
): Promise<{ rowsPerSec: number; ms: number; batches: number }> {
  const stream = freshStream(label);
  await api.createStream(stream);
  const batches = chunks(rows, size).map((b) => JSON.stringify(b));
  const totals = emptyTotals();
  const t0 = performance.now();
  for (const body of batches) {
    over();
    add(totals, await api.ingest(stream, body));
  }
  const ms = performance.now() - t0;
  await verifyRun(api, stream, label, totals, rows.length, distinct, batches.length);
  return { rowsPerSec: rows.length / (ms / 1000), ms, batches: batches.length };
}

// ---------------------------------------------------------------------------
// 2-4. The real Worker

async function benchWorker(): Promise<void> {
  console.log("\n2-4. The real Worker (wrangler dev on the project's wrangler.toml)");
  const server = await startWrangler({
    name: "edge-dedup",
    files: PROJECT_FILES,
    vars: { ADMIN_TOKEN: TOKEN },
    // Only our server knows the token, so only it answers this with a 404 naming the path.
    ready: async (url) => {
      const probe = `/v1/__bench_ready_${Math.random().toString(36).slice(2)}`;
      const a = await http("GET", url + probe, { headers: { authorization: `Bearer ${TOKEN}` } });
      return a.status === 404 && a.text.includes(probe);
    },
  });
  const api = new Api(server.url);
  try {
    await warmUp(api);
    await benchBatchSizes(api);
    await benchReplay(api);
    await benchConcurrency(api);
  } catch (e) {
    console.error(`--- wrangler log (tail) ---\n${server.log()}`);
    throw e;
  } finally {
    await server.stop();
  }
}

/** Not timed: compiles the Worker's code paths in workerd before anything is measured. */
async function warmUp(api: Api): Promise<void> {
  const over = budget("warm-up", 30_000);
  const stream = freshStream("warmup");
  await api.createStream(stream);
  const { rows } = workload("warm", 2_300, 0.2, 1);
  for (const b of [...chunks(rows.slice(0, 20), 1), ...chunks(rows.slice(20, 300), 140), ...chunks(rows.slice(300), 1_000)]) {
    over();
    await api.ingest(stream, JSON.stringify(b));
  }
}

async function benchBatchSizes(api: Api): Promise<void> {
  const { rows: total, duplicateShare, rounds, batch1MaxRequests } = INGEST;
  console.log(
    `\n2. Ingest throughput by batch size (${fmt(total)} rows, ~${duplicateShare * 100}% duplicate ids, a fresh stream per run;` +
      ` batch 1 bounded to ${batch1MaxRequests} requests and run once, the others ${rounds} times)`,
  );
  const over = budget("batch sizes", 100_000);
  const runs: Record<number, { rows: number; batches: number; ms: number; rowsPerSec: number }[]> = { 1_000: [], 100: [], 1: [] };
  const one = async (size: number, round: number) => {
    // rows/s is what is compared, so batch size 1 sends fewer rows.
    const n = Math.min(total, size * batch1MaxRequests);
    const label = `batch${size}-r${round}`;
    const { rows, distinct } = workload(label, n, duplicateShare, 100 + size + round);
    runs[size].push({ rows: n, ...(await ingestRun(api, label, rows, distinct, size, over)) });
  };
  // Alternating order; the slow batch-1 run sits in the middle.
  for (let round = 0; round < rounds; round++) {
    for (const size of round % 2 === 0 ? [1_000, 100] : [100, 1_000]) await one(size, round);
    if (round === Math.floor((rounds - 1) / 2)) await one(1, round);
  }
  const row = (size: number) => {
    const rs = runs[size];
    const ms = median(rs.map((r) => r.ms));
    return [fmt(size), rs.length, fmt(rs[0].rows), fmt(rs[0].batches), fmt(ms / 1000, 2), fmt(median(rs.map((r) => r.rowsPerSec))), fmt(ms / rs[0].batches, 1)];
  };
  table(["batch size", "runs", "rows", "requests", "seconds (median)", "rows/s (median)", "ms/request"], [row(1_000), row(100), row(1)]);
  const by = (s: number) => median(runs[s].map((r) => r.rowsPerSec));
  verdict("rows/s batch-1000 / batch-1", by(1_000) / by(1), 20, `(batch-100 / batch-1: ${fmt(by(100) / by(1), 1)}×; producers should batch)`);
}

async function benchReplay(api: Api): Promise<void> {
  console.log(`\n3. Replay: ${REPLAY.batches} committed ${fmt(REPLAY.rowsPerBatch)}-row batches sent again (same Idempotency-Key and body)`);
  const over = budget("replay", 90_000);
  const stream = freshStream("replay");
  await api.createStream(stream);
  const { rows, distinct } = workload("rp", REPLAY.batches * REPLAY.rowsPerBatch, INGEST.duplicateShare, 3);
  const batches = chunks(rows, REPLAY.rowsPerBatch).map((b, i) => ({ id: `replay-${i}`, body: JSON.stringify(b) }));

  const first: Outcome[] = [];
  const totals = emptyTotals();
  const t0 = performance.now();
  for (const b of batches) {
    over();
    const o = await api.ingest(stream, b.body, { batchId: b.id });
    first.push(o);
    add(totals, o);
  }
  const originalMs = performance.now() - t0;
  await verifyRun(api, stream, "replay (original)", totals, rows.length, distinct, batches.length);

  let same = 0;
  const t1 = performance.now();
  for (const [i, b] of batches.entries()) {
    over();
    const o = await api.ingest(stream, b.body, { batchId: b.id });
    const f = first[i];
    if (o.replayed && o.batchId === f.batchId && o.emitted === f.emitted && o.duplicates === f.duplicates && o.late === f.late) same++;
  }
  const replayMs = performance.now() - t1;
  check(same === batches.length, `replay: ${batches.length - same} of ${batches.length} replays were not marked replayed with the original outcome`);
  const info = await api.stream(stream);
  check(
    info.state.rows === distinct && info.batches.committed === batches.length,
    `replay changed the stream: ${info.state.rows} keys (expected ${distinct}), ${info.batches.committed} batches (expected ${batches.length})`,
  );

  // The floor under any request through `wrangler dev` on this machine, for scale.
  const floor: number[] = [];
  for (let i = 0; i < 20; i++) floor.push((await api.stream(stream))._ms);

  table(
    ["run", "requests", "seconds", "ms/request"],
    [
      ["original ingest", batches.length, fmt(originalMs / 1000, 2), fmt(originalMs / batches.length, 1)],
      ["replay", batches.length, fmt(replayMs / 1000, 2), fmt(replayMs / batches.length, 1)],
      ["GET stream (floor, median)", floor.length, "", fmt(median(floor), 1)],
    ],
  );
  verdict("time original / replay", originalMs / replayMs, 3, "(a replay reads the recorded outcome: no partition or R2 work)");
}

async function benchConcurrency(api: Api): Promise<void> {
  const { rows: total, rowsPerBatch, producers, rounds } = CONCURRENCY;
  console.log(`\n4. Concurrency: ${producers} producers vs 1, ${fmt(total)} rows in ${rowsPerBatch}-row batches, ${rounds} rounds alternating`);
  const over = budget("concurrency", 100_000);
  const run = async (n: number, round: number): Promise<number> => {
    const label = `prod${n}-r${round}`;
    const stream = freshStream(label);
    await api.createStream(stream);
    const { rows, distinct } = workload(label, total, INGEST.duplicateShare, 400 + round * 10 + n);
    const batches = chunks(rows, rowsPerBatch).map((b) => JSON.stringify(b));
    const totals = emptyTotals();
    const t0 = performance.now();
    // Producer j sends batches j, j+n, j+2n, ... in order, each as its own source.
    await Promise.all(
      Array.from({ length: n }, async (_, j) => {
        for (let k = j; k < batches.length; k += n) {
          over();
          add(totals, await api.ingest(stream, batches[k], { source: `producer-${j}` }));
        }
      }),
    );
    const ms = performance.now() - t0;
    await verifyRun(api, stream, label, totals, rows.length, distinct, batches.length);
    return rows.length / (ms / 1000);
  };
  const rates: Record<number, number[]> = { 1: [], [producers]: [] };
  for (let round = 0; round < rounds; round++) {
    for (const n of round % 2 === 0 ? [1, producers] : [producers, 1]) rates[n].push(await run(n, round));
  }
  // Each round's two runs are adjacent in time, so their ratio is less exposed to
  // other load on the machine than a ratio of medians taken over the whole part.
  const paired = rates[producers].map((r, i) => r / rates[1][i]);
  table(
    ["producers", "runs", "rows/s (median)", "rows/s (each round)"],
    [1, producers].map((n) => [n, rates[n].length, fmt(median(rates[n])), rates[n].map((r) => fmt(r)).join(", ")]),
  );
  console.log(`  per-round ratios: ${paired.map((r) => fmt(r, 2)).join(", ")}; ratio of medians: ${fmt(median(rates[producers]) / median(rates[1]), 2)}×`);
  verdict(
    `rows/s ${producers} producers / 1 (median of per-round ratios)`,
    median(paired),
    1,
    "(one local workerd on 2 cores can at best overlap I/O; in production the partitions run in parallel)",
  );
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${(TOTAL_BUDGET_MS + 60_000) / 1000} s; giving up`);
    killEverything();
    process.exit(1);
  }, TOTAL_BUDGET_MS + 60_000);
  watchdog.unref();

  console.log(`edge-dedup bench (Node ${process.version}); ratios compare runs made side by side in this process`);
  await benchSql();
  await benchWorker();

  console.log("\nSummary");
  for (const v of verdicts) console.log(`  ${v.pass ? "PASS" : "WARN"}  ${v.name}: ${fmt(v.ratio, 2)}×`);
  console.log(`  correctness: ${failures.length === 0 ? "all counts matched the data sent" : `${failures.length} check(s) FAILED`}`);
  console.log(`  finished in ${fmt((Date.now() - benchStart) / 1000, 1)} s`);
  if (failures.length > 0 || (STRICT && verdicts.some((v) => !v.pass))) process.exitCode = 1;
}

main().catch((e: unknown) => {
  console.error(`\nbench failed: ${e instanceof Error ? e.message : String(e)}`);
  killEverything();
  process.exit(1);
});

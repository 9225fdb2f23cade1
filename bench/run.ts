/**
 * `npm run bench`: edge-dedup against what a user could run instead, side by
 * side on this machine in one run, every target driven by the SAME load
 * generator (closed loop: N clients, each sends its next request when the last
 * one answered; a time budget per cell):
 *
 *   edge-dedup   the real Worker under `wrangler dev --define __OPCOUNT__:true`
 *                (a stream with 8 partitions or BENCH_PARTITIONS, key ["id"], eventTime "ts",
 *                watermarkDelay "1 hour"); its operation counters
 *                (src/instrument/opcount.ts, GET /__opcount) give DO calls, SQL statements
 *                and R2 operations per request and per event.
 *   edge-dedup-hashed  the same server, streams with stateKeys "hashed"
 *                (compact state: 64-bit key hashes instead of key text).
 *   redis        "the Redis script" (bench/redis-script.ts): node:http + one
 *                pipelined `SET key 1 NX PX` per row against a redis-server the
 *                bench starts on 127.0.0.1, survivors + marker written as files.
 *                Skipped, with a message, when redis-server is not installed.
 *   ceiling      "the minimal ceiling" (bench/ceiling/worker.ts under wrangler
 *                dev): parse, 8 SQLite DOs with one INSERT OR IGNORE … RETURNING
 *                each, two R2 puts.
 *   echo         a Worker that reads and parses the body and answers, nothing
 *                else (bench/echo/worker.ts): the floor of any Worker here. It
 *                deduplicates nothing, so only its answers are checked.
 *   echo-do      echo plus one call per request to a Durable Object that
 *                answers from the rows (bench/echo-do/worker.ts): the floor of
 *                a Worker whose every request consults a Durable Object, as
 *                each edge-dedup request calls its stream's Coordinator.
 *   echo-sql     echo-do whose Durable Object writes the request's ids to
 *                SQLite (one INSERT OR IGNORE … RETURNING) and answers once
 *                that write is durable (bench/echo-sql/worker.ts): the floor
 *                of a Worker that makes each request durable, and the
 *                simplest dedup on Durable Objects (no watermark, eviction,
 *                batch ids or output). Its answers and its state are checked.
 *
 * Cost: edge-dedup's counters include SQLite rows written and read (what a
 * SQLite Durable Object is billed for, from the cursors); rows written per
 * event and the cost per million events are computed from the counted
 * operations and Cloudflare's published prices (bench/pricing.ts, dated).
 *
 * Loads: 500-event batches from 4 clients; 1 event per request from 16 and from
 * 64 clients (the webhook case). Events are {id, ts, v} with ~20% of ids
 * repeating one of the last 500 new ids (so ~20% duplicates), event times 1 ms
 * apart starting two hours ago (never late, never evicted during a run).
 *
 * edge-dedup's counts include its background work for the cell's stream: what
 * runs between rounds and, after the cell, until its outbox has flushed (small
 * micro-batches reach R2 in outbox flushes, seconds after their commit).
 *
 * Correctness: every answer must be a 200, and per cell emitted == distinct ids
 * sent, duplicates == sent − distinct, no late or rejected rows; each target's
 * state must hold exactly the distinct keys (edge-dedup: GET /v1/streams/{s};
 * ceiling: its /state route; redis: DBSIZE) and have recorded every batch. A
 * broken target fails the bench (exit code 1). Throughput goals print PASS/WARN;
 * BENCH_STRICT=1 turns a WARN into exit code 1 too.
 *
 * Environment:
 *   BENCH_OUT=dir           where result.json and chart.svg go (created if
 *                           missing); default: a new directory under the system
 *                           temp dir, kept and printed at the end
 *   BENCH_CELL_SECONDS=8    timed seconds per (target, load) cell, split into
 *   BENCH_ROUNDS=2          interleaved rounds (targets A B C, then C B A)
 *   BENCH_TARGETS=edge-dedup,redis,ceiling   a subset, while developing
 *   BENCH_LOADS=batch500x4,webhook16,webhook64 (also: webhook1, webhook10, webhook100)
 *   BENCH_BASELINE=dir      adds the target "baseline": edge-dedup built from another
 *                           checkout (e.g. main, `git worktree add`), run exactly as
 *                           edge-dedup is, so that a change's before/after is one run
 *   BENCH_IDS=sequential     event ids: sequential (prefix-0, prefix-1, …) or
 *                           random (a random 48-bit hex part first, like most
 *                           real event ids: key-ordered storage inserts anywhere)
 *   BENCH_PARTITIONS=8      the partitions of edge-dedup's (and baseline's) streams,
 *                           1–1024: what fewer or more cost at a load (docs/SCALING.md).
 *                           The goals are set for 8: with another count they are
 *                           printed, not judged
 *   BENCH_STRICT=1
 *
 * Safety: every server (wrangler dev ×2, redis-server, the Redis script) runs
 * in its own process group on 127.0.0.1 and is killed at the end, on error and
 * on SIGINT/SIGTERM (bench/harness.ts); temporary directories are removed;
 * every loop is bounded by time and count; a watchdog ends the whole run.
 *
 * The older ratio benchmarks (SQL strategy, batch sizes, replay, producers)
 * are `npm run bench:micro` (bench/micro.ts).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient, type Outcome } from "../src/client/index.ts";
import type { MicroBatchTimes } from "../src/instrument/batch-timing.ts";
import { rng } from "../test/support/rng.ts";
import { costOf, PRICES } from "./pricing.ts";
import {
  BENCH_DIR,
  fmt,
  PROJECT_FILES,
  freePort,
  http,
  httpJson,
  killEverything,
  median,
  REQUEST_TIMEOUT_MS,
  ROOT,
  startProcess,
  startWrangler,
  table,
  tempDir,
  removeTempDir,
  type Server,
} from "./harness.ts";

const TOKEN = "bench-token";
const HOUR = 3_600_000;
const CELL_MS = Math.round(1000 * Number(process.env.BENCH_CELL_SECONDS ?? 8));
const ROUNDS = Math.max(1, Math.round(Number(process.env.BENCH_ROUNDS ?? 2)));
const WARM_MS = 1_500;
const DUPLICATE_SHARE = 0.2;
const RECENT_IDS = 500;
/** A cell stops sending at its time budget; this bounds the requests too. */
const MAX_REQUESTS_PER_CELL = 200_000;
const TOTAL_BUDGET_MS = 420_000;
const STRICT = process.env.BENCH_STRICT === "1";
const RANDOM_IDS = process.env.BENCH_IDS === "random";
/** The partitions the goals are set for, and those of this run's edge-dedup streams. */
const GOAL_PARTITIONS = 8;
const PARTITIONS = partitionsOf(process.env.BENCH_PARTITIONS);

function partitionsOf(v: string | undefined): number {
  if (v === undefined || v === "") return GOAL_PARTITIONS;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 1024) throw new Error(`BENCH_PARTITIONS: a whole number from 1 to 1024, not ${JSON.stringify(v)}`);
  return n;
}

interface Load {
  name: string;
  label: string;
  batch: number;
  clients: number;
}
const ALL_LOADS: Load[] = [
  { name: "batch500x4", label: "500-event batches, 4 clients", batch: 500, clients: 4 },
  { name: "webhook16", label: "1 event/request, 16 clients", batch: 1, clients: 16 },
  { name: "webhook64", label: "1 event/request, 64 clients", batch: 1, clients: 64 },
  // Not in the default run: R2 writes per event by concurrency (README), e.g.
  // BENCH_TARGETS=edge-dedup BENCH_LOADS=webhook1,webhook10,webhook100 npm run bench
  { name: "webhook1", label: "1 event/request, 1 client", batch: 1, clients: 1 },
  { name: "webhook10", label: "1 event/request, 10 clients", batch: 1, clients: 10 },
  { name: "webhook100", label: "1 event/request, 100 clients", batch: 1, clients: 100 },
];
const DEFAULT_LOADS = "batch500x4,webhook16,webhook64";
type TargetName = "edge-dedup" | "edge-dedup-hashed" | "redis" | "ceiling" | "echo" | "echo-do" | "echo-sql" | "baseline";
const ALL_TARGETS: TargetName[] = ["edge-dedup", "edge-dedup-hashed", "redis", "ceiling", "echo", "echo-do", "echo-sql", "baseline"];
/** Another checkout of edge-dedup (a directory with its src/, wrangler.toml, package.json, tsconfig.json): the "baseline" target runs its code. */
const BASELINE = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : null;

const pick = <T extends string>(env: string | undefined, all: readonly T[]): T[] => {
  if (!env) return [...all];
  const want = env.split(",").map((s) => s.trim());
  const bad = want.filter((w) => !all.includes(w as T));
  if (bad.length > 0) throw new Error(`unknown ${bad.join(", ")}; choose from ${all.join(", ")}`);
  return all.filter((a) => want.includes(a));
};

// ---------------------------------------------------------------------------
// Verdicts and correctness

interface Verdict {
  name: string;
  value: number | null;
  goal: string;
  pass: boolean | null;
  /** printed after the goal (e.g. the rounds' range); not part of the name, which stays the same from run to run */
  detail?: string;
}
const verdicts: Verdict[] = [];
const failures: string[] = [];

function check(ok: boolean, what: string): void {
  if (!ok) {
    failures.push(what);
    console.log(`  INCORRECT: ${what}`);
  }
}

function verdict(name: string, value: number | null, goal: { atLeast?: number; atMost?: number }, unit = "×", detail?: string): void {
  // Goals hold streams of GOAL_PARTITIONS partitions: another count is measured, not judged.
  const judged = value !== null && Number.isFinite(value) && PARTITIONS === GOAL_PARTITIONS;
  const pass = !judged ? null : goal.atLeast !== undefined ? value >= goal.atLeast : value <= goal.atMost!;
  const goalText = goal.atLeast !== undefined ? `≥ ${goal.atLeast}${unit}` : `≤ ${goal.atMost}${unit}`;
  verdicts.push({ name, value, goal: goalText, pass, ...(detail ? { detail } : {}) });
}

// ---------------------------------------------------------------------------
// The workload: one generator per cell, shared by its clients.

interface Event {
  id: string;
  ts: number;
  v: number;
}

class Workload {
  private readonly prefix: string;
  private readonly random: () => number;
  private readonly base = Date.now() - 2 * HOUR;
  private readonly recent: string[] = [];
  sent = 0;
  distinct = 0;
  /** requests made with this workload: numbers the Idempotency-Keys */
  requests = 0;

  constructor(prefix: string, seed: number) {
    this.prefix = prefix;
    this.random = rng(seed);
  }

  next(): Event {
    const i = this.sent++;
    let id: string;
    if (this.recent.length > 0 && this.random() < DUPLICATE_SHARE) {
      id = this.recent[Math.floor(this.random() * this.recent.length)];
    } else {
      // Sequential ids insert where the last one did; random ones (most real event ids) anywhere in the key order.
      id = RANDOM_IDS
        ? `${this.prefix}-${Math.floor(this.random() * 2 ** 48)
            .toString(16)
            .padStart(12, "0")}-${i}`
        : `${this.prefix}-${i}`;
      // A ring of the last RECENT_IDS new ids.
      if (this.recent.length < RECENT_IDS) this.recent.push(id);
      else this.recent[this.distinct % RECENT_IDS] = id;
      this.distinct++;
    }
    return { id, ts: this.base + i, v: i };
  }

  body(n: number): string {
    if (n === 1) return JSON.stringify(this.next()); // one JSON object, as a webhook sends it
    const rows: Event[] = [];
    for (let i = 0; i < n; i++) rows.push(this.next());
    return JSON.stringify(rows);
  }
}

// ---------------------------------------------------------------------------
// The load generator's HTTP client: node:http with keep-alive, one socket per client.

interface Reply {
  status: number;
  text: string;
}

function post(agent: Agent, url: URL, body: string, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolvePost, reject) => {
    const req = request(
      url,
      { method: "POST", agent, headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, timeout: REQUEST_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolvePost({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** What the load generator tallies of an answer; the Redis script and the ceiling answer these fields too. */
type Tally = Pick<Outcome, "input" | "emitted" | "duplicates" | "late" | "rejected">;

interface Drive {
  ms: number;
  requests: number;
  events: number;
  distinct: number;
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
  errors: number;
  firstError: string | null;
  latencies: number[];
}

/** `load.clients` clients send `load.batch`-event requests for `ms`; every answer is tallied. */
const emptyDrive = (): Drive => ({
  ms: 0,
  requests: 0,
  events: 0,
  distinct: 0,
  input: 0,
  emitted: 0,
  duplicates: 0,
  late: 0,
  rejected: 0,
  errors: 0,
  firstError: null,
  latencies: [],
});

/** Adds `b` (a later round on the same stream and workload) to `a`. */
function mergeDrive(a: Drive, b: Drive): void {
  for (const k of ["ms", "requests", "input", "emitted", "duplicates", "late", "rejected", "errors"] as const) a[k] += b[k];
  a.events = b.events; // cumulative in the workload
  a.distinct = b.distinct;
  a.firstError ??= b.firstError;
  a.latencies.push(...b.latencies);
}

async function drive(target: Target, stream: string, load: Load, ms: number, work: Workload): Promise<Drive> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.clients });
  const url = new URL(`${target.url}/v1/streams/${stream}/events`);
  const d = emptyDrive();
  const t0 = performance.now();
  const deadline = t0 + ms;
  try {
    await Promise.all(
      Array.from({ length: load.clients }, async () => {
        while (performance.now() < deadline && work.requests < MAX_REQUESTS_PER_CELL) {
          d.requests++;
          const n = work.requests++;
          const body = work.body(load.batch);
          const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "idempotency-key": `${stream}-${n}` };
          const s = performance.now();
          let reply: Reply;
          try {
            reply = await post(agent, url, body, headers);
          } catch (e) {
            reply = { status: 0, text: e instanceof Error ? e.message : String(e) };
          }
          d.latencies.push(performance.now() - s);
          if (reply.status !== 200) {
            d.errors++;
            d.firstError ??= `HTTP ${reply.status}: ${reply.text.slice(0, 300)}`;
            continue;
          }
          const o = JSON.parse(reply.text) as Tally;
          d.input += o.input;
          d.emitted += o.emitted;
          d.duplicates += o.duplicates;
          d.late += o.late;
          d.rejected += o.rejected.length;
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  d.ms = performance.now() - t0;
  d.events = work.sent;
  d.distinct = work.distinct;
  return d;
}

// ---------------------------------------------------------------------------
// Targets

interface OpCounts {
  requests: number;
  doCalls: Record<string, number>;
  sql: Record<string, number>;
  rowsWritten: Record<string, number>;
  rowsRead: Record<string, number>;
  /** `Class: statement` → rows written (src/instrument/opcount.ts) */
  rowsWrittenBy?: Record<string, number>;
  rowsReadBy?: Record<string, number>;
  r2: Record<string, number>;
  /** where the micro-batches' wall time went (src/instrument/batch-timing.ts); a server of an older release has none */
  microBatches?: MicroBatchTimes;
}

interface Target {
  name: TargetName;
  url: string;
  /** creates the stream when the target needs it */
  prepare(stream: string): Promise<void>;
  /** distinct keys held, state bytes when known, batches recorded; null: it keeps no state (echo) */
  state(stream: string): Promise<{ rows: number; bytes: number | null; batches: number | null } | null>;
  takeOpCounts?(): Promise<OpCounts>;
  stop(): Promise<void>;
}

const auth = { authorization: `Bearer ${TOKEN}` };
const sum = (t: Record<string, number>) => Object.values(t).reduce((a, b) => a + b, 0);

/** One wrangler dev serves both edge-dedup targets (text and hashed keys); the last target to stop stops it. */
let edgeServer: { server: Awaited<ReturnType<typeof startWrangler>>; users: number } | null = null;

async function startEdgeDedup(name: "edge-dedup" | "edge-dedup-hashed"): Promise<Target> {
  if (!edgeServer) {
    const server = await startWrangler({
      name: "edge-dedup",
      files: PROJECT_FILES,
      vars: { ADMIN_TOKEN: TOKEN },
      defines: { __OPCOUNT__: "true" },
      // Only our server has the counters route (a 200 with its JSON shape).
      ready: async (url) => {
        const a = await http("GET", `${url}/__opcount`);
        return a.status === 200 && "doCalls" in JSON.parse(a.text);
      },
    });
    edgeServer = { server, users: 0 };
  }
  const shared = edgeServer;
  shared.users++;
  const server = shared.server;
  // Control calls through the typed client; the load itself goes through drive()'s keep-alive client, the same for every target.
  const api = createClient({ baseUrl: server.url, token: TOKEN, timeoutMs: REQUEST_TIMEOUT_MS });
  const stateKeys = name === "edge-dedup-hashed" ? "hashed" : "text";
  return {
    name,
    url: server.url,
    async prepare(stream) {
      // A repeated id is a retry: its new ts and v are volatile, so it is a duplicate, not a conflict (docs/concepts/same-event.md).
      await api.putStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: PARTITIONS, stateKeys, volatile: ["ts", "v"] });
    },
    async state(stream) {
      const s = await api.getStream(stream);
      return { rows: s.state.rows, bytes: s.state.bytes, batches: s.batches.committed };
    },
    takeOpCounts: () => httpJson<OpCounts>("GET", `${server.url}/__opcount`),
    stop: async () => {
      if (--shared.users === 0) await server.stop();
    },
  };
}

/** edge-dedup from BENCH_BASELINE's code, built and run as edge-dedup is (its counters on, not read). */
async function startBaseline(dir: string): Promise<Target> {
  const server = await startWrangler({
    name: "baseline",
    files: Object.fromEntries(["src", "wrangler.toml", "package.json", "tsconfig.json"].map((entry) => [entry, join(dir, entry)])),
    vars: { ADMIN_TOKEN: TOKEN },
    defines: { __OPCOUNT__: "true" },
    ready: async (url) => (await http("GET", `${url}/__opcount`)).status === 200,
  });
  const api = createClient({ baseUrl: server.url, token: TOKEN, timeoutMs: REQUEST_TIMEOUT_MS });
  return {
    name: "baseline",
    url: server.url,
    prepare: async (stream) =>
      void (await api.putStream(stream, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: PARTITIONS, volatile: ["ts", "v"] })),
    async state(stream) {
      const s = await api.getStream(stream);
      return { rows: s.state.rows, bytes: s.state.bytes, batches: s.batches.committed };
    },
    stop: () => server.stop(),
  };
}

async function startCeiling(): Promise<Target> {
  const dir = join(BENCH_DIR, "ceiling");
  const server = await startWrangler({
    name: "ceiling",
    files: { "worker.ts": join(dir, "worker.ts"), "wrangler.toml": join(dir, "wrangler.toml") },
    ready: async (url) => (await http("GET", `${url}/ping`)).text === "edge-dedup-ceiling-bench",
  });
  return {
    name: "ceiling",
    url: server.url,
    prepare: async () => undefined,
    async state(stream) {
      const s = await httpJson<{ rows: number; bytes: number }>("GET", `${server.url}/v1/streams/${stream}/state`, { headers: auth });
      return { rows: s.rows, bytes: s.bytes, batches: null };
    },
    stop: () => server.stop(),
  };
}

/**
 * echo (bench/echo), echo-do (bench/echo-do) or echo-sql (bench/echo-sql).
 * echo and echo-do keep no state, so only their answers' counts are checked;
 * echo-sql keeps its ids, checked as the ceiling's keys are.
 */
async function startEcho(name: "echo" | "echo-do" | "echo-sql" = "echo"): Promise<Target> {
  const dir = join(BENCH_DIR, name);
  const server = await startWrangler({
    name,
    files: { "worker.ts": join(dir, "worker.ts"), "wrangler.toml": join(dir, "wrangler.toml") },
    ready: async (url) => (await http("GET", `${url}/ping`)).text === `edge-dedup-${name}-bench`,
  });
  const state: Target["state"] =
    name !== "echo-sql"
      ? async () => null
      : async (stream) => {
          const s = await httpJson<{ rows: number; bytes: number }>("GET", `${server.url}/v1/streams/${stream}/state`, { headers: auth });
          return { rows: s.rows, bytes: s.bytes, batches: null };
        };
  return { name, url: server.url, prepare: async () => undefined, state, stop: () => server.stop() };
}

function redisAvailable(): string | null {
  const r = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (r.error || r.status !== 0) return null;
  const cli = spawnSync("redis-cli", ["--version"], { encoding: "utf8" });
  if (cli.error || cli.status !== 0) return null;
  return r.stdout.trim();
}

async function startRedis(): Promise<Target> {
  const base = tempDir("edge-dedup-bench-redis-");
  const out = join(base, "out");
  mkdirSync(out);
  const redisPort = await freePort();
  const redis = await startProcess({
    name: "redis-server",
    command: "redis-server",
    args: ["--bind", "127.0.0.1", "--port", String(redisPort), "--save", "", "--appendonly", "no", "--dir", base, "--protected-mode", "yes"],
    cwd: base,
    env: process.env,
    logFile: join(base, "redis.log"),
    url: `redis://127.0.0.1:${redisPort}`,
    ready: async () => cli(redisPort, "PING") === "PONG",
  });
  const port = await freePort();
  let script: Server;
  try {
    script = await startProcess({
      name: "redis-script",
      command: process.execPath,
      args: ["--experimental-strip-types", join(BENCH_DIR, "redis-script.ts"), String(port), String(redisPort), out, TOKEN, String(HOUR)],
      cwd: base,
      env: process.env,
      logFile: join(base, "script.log"),
      url: `http://127.0.0.1:${port}`,
      ready: async (url) => (await http("GET", `${url}/ping`)).text === "edge-dedup-redis-script",
    });
  } catch (e) {
    await redis.stop();
    throw e;
  }
  return {
    name: "redis",
    url: script.url,
    // The bench owns this redis-server: each cell starts from an empty one.
    prepare: async () => void cli(redisPort, "FLUSHALL"),
    async state(stream) {
      const rows = Number(cli(redisPort, "DBSIZE"));
      const files = readdirSync(join(out, stream));
      const mem = cli(redisPort, "MEMORY", "STATS").split("\n");
      const i = mem.indexOf("keys.bytes-per-key");
      return { rows, bytes: i >= 0 ? Number(mem[i + 1]) * rows : null, batches: files.filter((f) => f.endsWith(".marker.json")).length };
    },
    async stop() {
      await script.stop();
      await redis.stop();
      removeTempDir(base);
    },
  };
}

function cli(port: number, ...args: string[]): string {
  return execFileSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], {
    encoding: "utf8",
    timeout: 10_000,
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();
}

// ---------------------------------------------------------------------------
// One cell: a fresh stream, warm-up (untimed, its own stream), then the timed run.

interface Cell {
  target: TargetName;
  load: string;
  batch: number;
  clients: number;
  seconds: number;
  requests: number;
  events: number;
  eventsPerSec: number;
  requestsPerSec: number;
  /** each timed round's events/s, in round order (the rounds of one load run interleaved across targets) */
  roundEventsPerSec: number[];
  p50ms: number;
  p99ms: number;
  distinct: number;
  emitted: number;
  duplicates: number;
  errors: number;
  state: { rows: number; bytes: number | null; batches: number | null; bytesPerKey: number | null } | null;
  ops?: {
    counts: OpCounts;
    perRequest: { doCalls: number; sql: number; r2Puts: number };
    perEvent: { doCalls: number; sql: number; r2Puts: number; rowsWritten: number; rowsRead: number };
    /** USD per million events, from the counted operations (bench/pricing.ts) */
    costPerMillionEvents: ReturnType<typeof costOf>;
  };
}

let streamSeq = 0;
const runId = Date.now().toString(36);

/** A (target, load) cell in progress: its stream and workload carry over from round to round. */
interface Pending {
  target: Target;
  load: Load;
  stream: string;
  work: Workload;
  d: Drive;
  counts: OpCounts | null;
  /** events/s of each timed round */
  rounds: number[];
}

/** Warm-up (untimed, on its own stream), then a fresh stream for the timed rounds. */
async function prepareCell(target: Target, load: Load, seed: number): Promise<Pending> {
  const warm = `warm-${target.name}-${load.name}-${runId}-${streamSeq++}`;
  await target.prepare(warm);
  const w = await drive(target, warm, load, WARM_MS, new Workload(warm, seed + 1_000));
  check(w.errors === 0, `${target.name} ${load.name} warm-up: ${w.errors} failed requests (${w.firstError})`);
  const stream = `bench-${target.name}-${load.name}-${runId}-${streamSeq++}`;
  await target.prepare(stream);
  return { target, load, stream, work: new Workload(stream, seed), d: emptyDrive(), counts: null, rounds: [] };
}

/** One timed round; operation counters are taken around it, so they see only its requests. */
async function runRound(c: Pending, ms: number): Promise<void> {
  // Work done between rounds is this stream's background work (outbox flushes, eviction): it counts too.
  const between = await c.target.takeOpCounts?.();
  if (between && c.counts) mergeCounts(c.counts, between);
  const d = await drive(c.target, c.stream, c.load, ms, c.work);
  const counts = await c.target.takeOpCounts?.();
  c.rounds.push((d.requests * c.load.batch) / (d.ms / 1000));
  mergeDrive(c.d, d);
  if (counts) {
    const what = `${c.target.name} ${c.load.name}`;
    // The counters must have seen this round: the Worker's requests, the DOs' SQL (inside the DOs) and calls to the
    // Coordinator (requests may share a call: micro-batching; that every batch committed is checked against the stream).
    check(counts.requests === d.requests, `${what}: the Worker counted ${counts.requests} requests, the bench sent ${d.requests}`);
    check(
      sum(counts.sql) > 0 && Object.entries(counts.doCalls).some(([k, n]) => k.startsWith("COORDINATOR.") && n > 0),
      `${what}: the operation counters did not see the Durable Objects' work (${JSON.stringify(counts)})`,
    );
    if (!c.counts) c.counts = counts;
    else mergeCounts(c.counts, counts);
  }
}

function mergeCounts(into: OpCounts, more: OpCounts): void {
  into.requests += more.requests;
  for (const k of ["doCalls", "sql", "rowsWritten", "rowsRead", "rowsWrittenBy", "rowsReadBy", "r2", "microBatches"] as const) {
    // Every table here, micro-batch times included, is names to numbers that add up.
    const to = (into[k] ??= {} as never) as Record<string, number>;
    for (const [op, n] of Object.entries(more[k] ?? {})) to[op] = (to[op] ?? 0) + n;
  }
}

/**
 * edge-dedup writes small micro-batches to R2 later, in outbox flushes (due
 * after FLUSH_AFTER_MS); a cell waits for them so that their R2 writes and
 * calls count against the events that caused them.
 */
const DRAIN_MS = 12_000;

/** Checks the cell's answers and the target's state against the data sent. */
async function finishCell(c: Pending): Promise<Cell> {
  const { d, target, load } = c;
  if (c.counts && target.takeOpCounts) {
    await new Promise((r) => setTimeout(r, DRAIN_MS));
    const after = await target.takeOpCounts();
    if (after) mergeCounts(c.counts, after);
  }
  const state = await target.state(c.stream);
  const what = `${target.name} ${load.name}`;
  check(d.errors === 0, `${what}: ${d.errors} of ${d.requests} requests failed (first: ${d.firstError})`);
  if (state === null) check(d.input === d.events, `${what}: input ${d.input}/${d.events}`);
  else
    check(
      d.input === d.events && d.emitted === d.distinct && d.duplicates === d.events - d.distinct && d.late === 0 && d.rejected === 0,
      `${what}: input ${d.input}/${d.events}, emitted ${d.emitted}/${d.distinct} distinct, duplicates ${d.duplicates}/${d.events - d.distinct}, late ${d.late}, rejected ${d.rejected}`,
    );
  if (state) check(state.rows === d.distinct, `${what}: the target's state holds ${state.rows} keys, expected ${d.distinct}`);
  if (state && state.batches !== null) check(state.batches === d.requests, `${what}: ${state.batches} batches recorded, expected ${d.requests}`);

  const cell: Cell = {
    target: target.name,
    load: load.name,
    batch: load.batch,
    clients: load.clients,
    seconds: d.ms / 1000,
    requests: d.requests,
    events: d.events,
    eventsPerSec: d.events / (d.ms / 1000),
    requestsPerSec: d.requests / (d.ms / 1000),
    roundEventsPerSec: c.rounds,
    p50ms: median(d.latencies),
    p99ms: [...d.latencies].sort((a, b) => a - b)[Math.floor(0.99 * (d.latencies.length - 1))] ?? NaN,
    distinct: d.distinct,
    emitted: d.emitted,
    duplicates: d.duplicates,
    errors: d.errors,
    state: state && { ...state, bytesPerKey: state.bytes !== null && state.rows > 0 ? state.bytes / state.rows : null },
  };
  if (c.counts) {
    const counts = c.counts;
    const doCalls = sum(counts.doCalls);
    const sql = sum(counts.sql);
    const r2Puts = Object.entries(counts.r2)
      .filter(([k]) => k.endsWith(".put"))
      .reduce((a, [, v]) => a + v, 0);
    const cost = costOf(counts);
    cell.ops = {
      counts,
      perRequest: { doCalls: doCalls / d.requests, sql: sql / d.requests, r2Puts: r2Puts / d.requests },
      perEvent: {
        doCalls: doCalls / d.events,
        sql: sql / d.events,
        r2Puts: r2Puts / d.events,
        rowsWritten: sum(counts.rowsWritten ?? {}) / d.events,
        rowsRead: sum(counts.rowsRead ?? {}) / d.events,
      },
      costPerMillionEvents: Object.fromEntries(Object.entries(cost).map(([k, v]) => [k, (v / d.events) * 1e6])) as typeof cost,
    };
  }
  console.log(
    `  ${target.name.padEnd(10)} ${fmt(cell.eventsPerSec).padStart(8)} events/s  ${fmt(cell.requestsPerSec, 1).padStart(8)} req/s` +
      `  p50 ${fmt(cell.p50ms, 1)} ms  p99 ${fmt(cell.p99ms, 1)} ms  (${fmt(d.requests)} requests, ${fmt(d.events)} events, ${fmt(d.distinct)} distinct)`,
  );
  return cell;
}

// ---------------------------------------------------------------------------
// Output: a table, result.json and chart.svg

function outDir(): string {
  if (process.env.BENCH_OUT) {
    const dir = resolve(process.env.BENCH_OUT);
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  return mkdtempSync(join(tmpdir(), "edge-dedup-bench-results-")); // kept: it is the result
}

const COLORS: Record<TargetName, string> = {
  "edge-dedup": "#f38020",
  "edge-dedup-hashed": "#f9b36b",
  redis: "#d82c20",
  ceiling: "#3b6ea5",
  echo: "#868e96",
  "echo-do": "#adb5bd",
  "echo-sql": "#ced4da",
  baseline: "#7b5ea7",
};

/** Grouped bars, one group per load, one bar per target, events/s on a log scale. */
function chart(cells: Cell[], loads: Load[], targets: TargetName[], subtitle: string): string {
  const W = 760,
    H = 420,
    left = 80,
    right = 20,
    top = 50,
    bottom = 80;
  const plotW = W - left - right,
    plotH = H - top - bottom;
  const values = cells.map((c) => c.eventsPerSec).filter((v) => v > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...values, 10))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 100))));
  const y = (v: number) => top + plotH - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotH;
  const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">Throughput (events/s, log scale) by load and target — npm run bench</text>`);
  parts.push(`<text x="${W / 2}" y="38" text-anchor="middle" fill="#555">${esc(subtitle)}</text>`);
  for (let d = lo; d <= hi; d *= 10) {
    parts.push(`<line x1="${left}" x2="${W - right}" y1="${y(d)}" y2="${y(d)}" stroke="#ddd"/>`);
    parts.push(`<text x="${left - 6}" y="${y(d) + 4}" text-anchor="end">${fmt(d)}</text>`);
  }
  const groupW = plotW / loads.length;
  const barW = Math.min(50, (groupW * 0.8) / targets.length);
  loads.forEach((load, g) => {
    const x0 = left + g * groupW + (groupW - barW * targets.length) / 2;
    targets.forEach((t, i) => {
      const c = cells.find((c) => c.load === load.name && c.target === t);
      const x = x0 + i * barW;
      if (!c) {
        parts.push(`<text x="${x + barW / 2}" y="${top + plotH - 4}" text-anchor="middle" fill="#999">n/a</text>`);
        return;
      }
      parts.push(`<rect x="${x + 2}" y="${y(c.eventsPerSec)}" width="${barW - 4}" height="${top + plotH - y(c.eventsPerSec)}" fill="${COLORS[t]}"/>`);
      parts.push(`<text x="${x + barW / 2}" y="${y(c.eventsPerSec) - 4}" text-anchor="middle" font-size="10">${fmt(c.eventsPerSec)}</text>`);
    });
    parts.push(`<text x="${left + g * groupW + groupW / 2}" y="${top + plotH + 18}" text-anchor="middle">${esc(load.label)}</text>`);
  });
  parts.push(`<line x1="${left}" x2="${W - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="#333"/>`);
  targets.forEach((t, i) => {
    const x = left + i * 150;
    parts.push(`<rect x="${x}" y="${H - 30}" width="12" height="12" fill="${COLORS[t]}"/><text x="${x + 18}" y="${H - 20}">${t}</text>`);
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${TOTAL_BUDGET_MS / 1000} s; giving up`);
    killEverything();
    process.exit(1);
  }, TOTAL_BUDGET_MS);
  watchdog.unref();

  const loads = ALL_LOADS.filter((l) =>
    pick(
      process.env.BENCH_LOADS ?? DEFAULT_LOADS,
      ALL_LOADS.map((x) => x.name),
    ).includes(l.name),
  );
  let targetNames = pick(process.env.BENCH_TARGETS, ALL_TARGETS);
  console.log(
    `edge-dedup bench (Node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")})`,
  );
  console.log(
    `  ${CELL_MS / 1000} s per cell in ${ROUNDS} interleaved round(s), after ${WARM_MS / 1000} s of warm-up;` +
      ` ~${DUPLICATE_SHARE * 100}% duplicate ids, ${RANDOM_IDS ? "random" : "sequential"} ids; edge-dedup streams of ${PARTITIONS} partition${PARTITIONS === 1 ? "" : "s"}; the same load generator for every target`,
  );

  const skipped: string[] = [];
  const redisVersion = targetNames.includes("redis") ? redisAvailable() : null;
  if (targetNames.includes("redis") && !redisVersion) {
    const msg = "redis-server or redis-cli not found on PATH (Debian: apt-get install redis-server): the Redis target is skipped";
    console.log(`  SKIP: ${msg}`);
    skipped.push(msg);
    targetNames = targetNames.filter((t) => t !== "redis");
  } else if (redisVersion) console.log(`  ${redisVersion}`);
  if (targetNames.includes("baseline") && !BASELINE) {
    if (
      process.env.BENCH_TARGETS?.split(",")
        .map((x) => x.trim())
        .includes("baseline")
    )
      throw new Error("the baseline target needs BENCH_BASELINE=dir (another checkout)");
    targetNames = targetNames.filter((t) => t !== "baseline"); // not asked for: the default run has no baseline
  } else if (BASELINE) console.log(`  baseline: edge-dedup from ${BASELINE}`);

  const targets: Target[] = [];
  const cells: Cell[] = [];
  try {
    console.log("\nStarting the targets");
    for (const name of targetNames) {
      targets.push(
        await (name === "edge-dedup" || name === "edge-dedup-hashed"
          ? startEdgeDedup(name)
          : name === "redis"
            ? startRedis()
            : name === "echo" || name === "echo-do" || name === "echo-sql"
              ? startEcho(name)
              : name === "baseline"
                ? startBaseline(BASELINE!)
                : startCeiling()),
      );
    }
    // The cells of one load run interleaved: ROUNDS rounds of CELL_MS / ROUNDS
    // each, the targets' order reversed every round (A B C, C B A, …), so each
    // ratio compares runs made close together in time on a shared machine.
    for (const [li, load] of loads.entries()) {
      console.log(`\n${load.label}`);
      const pending: Pending[] = [];
      for (const t of targets) pending.push(await prepareCell(t, load, 100 * (li + 1)));
      for (let round = 0; round < ROUNDS; round++) {
        for (const c of round % 2 === 0 ? pending : [...pending].reverse()) await runRound(c, CELL_MS / ROUNDS);
      }
      for (const c of pending) cells.push(await finishCell(c));
    }
  } finally {
    for (const t of targets.reverse()) await t.stop().catch(() => undefined);
  }

  // ---- the table
  const cell = (t: TargetName, l: string) => cells.find((c) => c.target === t && c.load === l);
  console.log("\nThroughput");
  table(
    ["load", "target", "events/s", "requests/s", "p50 ms", "p99 ms", "requests", "state bytes/key"],
    cells.map((c) => [
      c.load,
      c.target,
      fmt(c.eventsPerSec),
      fmt(c.requestsPerSec, 1),
      fmt(c.p50ms, 1),
      fmt(c.p99ms, 1),
      fmt(c.requests),
      c.state?.bytesPerKey == null ? "" : fmt(c.state.bytesPerKey, 1),
    ]),
  );

  console.log(
    `  state bytes/key: edge-dedup (text keys) and edge-dedup-hashed = SQLite size of the stream's ${PARTITIONS} partition objects ÷ keys, ceiling = its 8 objects'`,
  );
  console.log("  (edge-dedup's includes its partition ledgers and meta rows); echo-sql = its one object's SQLite size ÷ ids;");
  console.log("  redis = MEMORY STATS keys.bytes-per-key. Small key counts inflate it.");

  const ratio = (l: string, other: TargetName, ours: TargetName = "edge-dedup") => {
    const [a, b] = [cell(ours, l), cell(other, l)];
    return a && b ? a.eventsPerSec / b.eventsPerSec : null;
  };
  const ratios: Record<
    string,
    {
      vsRedis: number | null;
      vsCeiling: number | null;
      vsEcho: number | null;
      vsEchoDo: number | null;
      echoDoVsEcho: number | null;
      vsEchoSql: number | null;
      echoSqlVsEcho: number | null;
      hashedVsCeiling: number | null;
      hashedVsText: number | null;
      vsBaseline: number | null;
      baselineVsCeiling: number | null;
      baselineVsEcho: number | null;
    }
  > = {};
  for (const l of loads) {
    ratios[l.name] = {
      vsRedis: ratio(l.name, "redis"),
      vsCeiling: ratio(l.name, "ceiling"),
      vsEcho: ratio(l.name, "echo"),
      vsEchoDo: ratio(l.name, "echo-do"),
      echoDoVsEcho: ratio(l.name, "echo", "echo-do"),
      vsEchoSql: ratio(l.name, "echo-sql"),
      echoSqlVsEcho: ratio(l.name, "echo", "echo-sql"),
      hashedVsCeiling: ratio(l.name, "ceiling", "edge-dedup-hashed"),
      hashedVsText: ratio(l.name, "edge-dedup", "edge-dedup-hashed"),
      vsBaseline: ratio(l.name, "baseline"),
      baselineVsCeiling: ratio(l.name, "ceiling", "baseline"),
      baselineVsEcho: ratio(l.name, "echo", "baseline"),
    };
  }
  const r = (x: number | null) => (x === null ? "skipped" : fmt(x, 3));
  console.log("\nRatios (events/s ÷ events/s; the same for requests/s, since a load has one batch size)");
  table(
    [
      "load",
      "edge-dedup/redis",
      "edge-dedup/ceiling",
      "edge-dedup/echo",
      "edge-dedup/echo-do",
      "echo-do/echo",
      "edge-dedup/echo-sql",
      "echo-sql/echo",
      "hashed/ceiling",
      "hashed/text",
    ],
    loads.map((l) => [
      l.name,
      r(ratios[l.name].vsRedis),
      r(ratios[l.name].vsCeiling),
      r(ratios[l.name].vsEcho),
      r(ratios[l.name].vsEchoDo),
      r(ratios[l.name].echoDoVsEcho),
      r(ratios[l.name].vsEchoSql),
      r(ratios[l.name].echoSqlVsEcho),
      r(ratios[l.name].hashedVsCeiling),
      r(ratios[l.name].hashedVsText),
    ]),
  );
  // Round by round: each round's ratio compares runs made within seconds of each other, so their spread is this machine's noise.
  const roundRatios: { load: string; vs: TargetName; rounds: number[] }[] = [];
  for (const l of loads) {
    for (const other of ["echo", "echo-do", "echo-sql", "ceiling", "redis", "baseline"] as const) {
      const [a, b] = [cell("edge-dedup", l.name), cell(other, l.name)];
      if (a && b && a.roundEventsPerSec.length === b.roundEventsPerSec.length) {
        roundRatios.push({ load: l.name, vs: other, rounds: a.roundEventsPerSec.map((x, i) => x / b.roundEventsPerSec[i]) });
      }
    }
  }
  const spreadOf = (load: string, vs: TargetName) => roundRatios.find((x) => x.load === load && x.vs === vs)?.rounds;
  if (ROUNDS > 1 && roundRatios.length > 0) {
    console.log("\nRound by round (each round's events/s ÷ the other target's in the same round: the spread is the machine's noise)");
    table(
      ["load", "ratio", "whole run", "lowest", "median", "highest", "rounds"],
      roundRatios.map((x) => [
        x.load,
        `edge-dedup/${x.vs}`,
        r(ratio(x.load, x.vs)),
        fmt(Math.min(...x.rounds), 3),
        fmt(median(x.rounds), 3),
        fmt(Math.max(...x.rounds), 3),
        x.rounds.map((v) => fmt(v, 2)).join(" "),
      ]),
    );
  }
  if (targetNames.includes("baseline")) {
    console.log("\nAgainst the baseline (BENCH_BASELINE's code, same run)");
    table(
      ["load", "edge-dedup/baseline", "baseline/ceiling", "baseline/echo", "edge-dedup/ceiling", "edge-dedup/echo"],
      loads.map((l) => [
        l.name,
        r(ratios[l.name].vsBaseline),
        r(ratios[l.name].baselineVsCeiling),
        r(ratios[l.name].baselineVsEcho),
        r(ratios[l.name].vsCeiling),
        r(ratios[l.name].vsEcho),
      ]),
    );
  }

  const edgeCells = cells.filter((c) => c.ops);
  if (edgeCells.length > 0) {
    console.log("\nedge-dedup operations (counted by src/instrument/opcount.ts under --define __OPCOUNT__:true)");
    table(
      ["load", "target", "DO calls/req", "SQL/req", "R2 puts/req", "DO calls/event", "SQL/event", "R2 puts/event", "DO calls by method"],
      edgeCells.map((c) => [
        c.load,
        c.target,
        fmt(c.ops!.perRequest.doCalls, 2),
        fmt(c.ops!.perRequest.sql, 1),
        fmt(c.ops!.perRequest.r2Puts, 2),
        fmt(c.ops!.perEvent.doCalls, 3),
        fmt(c.ops!.perEvent.sql, 3),
        fmt(c.ops!.perEvent.r2Puts, 3),
        Object.entries(c.ops!.counts.doCalls)
          .map(([k, v]) => `${k} ${fmt(v / c.requests, 2)}`)
          .join(", "),
      ]),
    );
    console.log("  DO calls are counted at the caller (Worker and Coordinator, so the eviction fan-out's PARTITION.advance counts);");
    console.log("  alarm invocations are not. Every R2 put here writes an object (create-only; no batch is replayed).");

    // Wall time, not CPU: what a request waits for inside the Coordinator (src/instrument/batch-timing.ts).
    const timed = edgeCells.filter((c) => (c.ops!.counts.microBatches?.runs ?? 0) > 0);
    if (timed.length > 0) {
      console.log("\nedge-dedup micro-batches, as the Coordinator sees them (wall ms; src/instrument/batch-timing.ts)");
      table(
        ["load", "target", "micro-batches", "requests each", "queued ms/request", "apply ms", "commit ms", "between ms"],
        timed.map((c) => {
          const t = c.ops!.counts.microBatches!;
          return [
            c.load,
            c.target,
            fmt(t.runs),
            fmt(t.requests / t.runs, 1),
            fmt(t.queuedMs / t.requests, 1),
            fmt(t.applyMs / t.runs, 1),
            fmt(t.commitMs / t.runs, 1),
            t.gaps > 0 ? fmt(t.betweenMs / t.gaps, 1) : "",
          ];
        }),
      );
      console.log("  apply: begin to the partitions' last answer (their writes' durability included); commit: to the end of the commit's");
      console.log("  transaction (the answer then waits for its durability); between: one micro-batch's end to the next one's start.");
    }

    console.log(`\nedge-dedup cost per million events (counted operations × Cloudflare's prices read ${PRICES.readOn}; bench/pricing.ts)`);
    const usd = (x: number) => `$${x.toFixed(3)}`;
    table(
      ["load", "target", "rows written/event", "by class", "rows read/event", "Workers", "DO requests", "rows written", "rows read", "R2", "total"],
      edgeCells.map((c) => {
        const k = c.ops!.costPerMillionEvents;
        const byClass = Object.entries(c.ops!.counts.rowsWritten ?? {})
          .map(([who, n]) => `${who} ${fmt(n / c.events, 2)}`)
          .join(", ");
        return [
          c.load,
          c.target,
          fmt(c.ops!.perEvent.rowsWritten, 2),
          byClass,
          fmt(c.ops!.perEvent.rowsRead, 1),
          usd(k.workers),
          usd(k.doRequests),
          usd(k.rowsWritten),
          usd(k.rowsRead),
          usd(k.r2),
          usd(k.total),
        ];
      }),
    );
    console.log("  Left out: CPU time, DO duration, storage and free allowances (see bench/pricing.ts).");
    for (const [what, key, least] of [
      ["written", "rowsWrittenBy", 0.05],
      ["read", "rowsReadBy", 1],
    ] as const) {
      console.log(`\nWhere the rows ${what} go (per event, the statements ${what === "written" ? "writing" : "reading"} ≥ ${least} rows/event)`);
      for (const c of edgeCells) {
        const by = Object.entries(c.ops!.counts[key] ?? {})
          .map(([s, n]) => [s, n / c.events] as const)
          .filter(([, n]) => n >= least)
          .sort((a, b) => b[1] - a[1]);
        console.log(`  ${c.load} ${c.target}`);
        for (const [s, n] of by) console.log(`    ${fmt(n, 2).padStart(6)}  ${s}`);
      }
    }
  }

  // ---- goals
  for (const l of loads) {
    if (l.batch > 1) {
      verdict(`${l.name}: edge-dedup/redis events/s`, ratios[l.name].vsRedis, { atLeast: 1.0 });
      verdict(`${l.name}: edge-dedup/ceiling events/s`, ratios[l.name].vsCeiling, { atLeast: 0.9 });
    } else {
      verdict(`${l.name}: edge-dedup/redis events/s`, ratios[l.name].vsRedis, { atLeast: 1.0 });
    }
  }
  // Bookkeeping's cost (DESIGN §9): rows written per event and the cost per million events, from the counted operations.
  const rowGoals: Record<string, number> = { webhook16: 3, batch500x4: 2.2 };
  for (const [l, most] of Object.entries(rowGoals)) {
    const c = cell("edge-dedup", l);
    if (c?.ops) verdict(`${l}: SQLite rows written per event`, c.ops.perEvent.rowsWritten, { atMost: most }, "");
  }
  for (const c of cells.filter((x) => x.target === "edge-dedup" && x.ops)) {
    verdict(`${c.load}: cost per million events`, c.ops!.costPerMillionEvents.total, { atMost: c.batch > 1 ? 2.25 : 3.0 }, " USD");
  }
  const echoRounds = spreadOf("webhook16", "echo");
  const roundsRange = echoRounds && echoRounds.length > 1 ? `rounds ${fmt(Math.min(...echoRounds), 2)}–${fmt(Math.max(...echoRounds), 2)}` : undefined;
  verdict("webhook16: edge-dedup/echo events/s", ratios.webhook16?.vsEcho ?? null, { atLeast: 0.6 }, "×", roundsRange);
  verdict("batch500x4: edge-dedup/ceiling events/s (bookkeeping goal)", ratios.batch500x4?.vsCeiling ?? null, { atLeast: 1.0 });
  const wh16 = cell("edge-dedup", "webhook16");
  if (wh16?.ops) {
    verdict("webhook16: R2 objects written per event", wh16.ops.perEvent.r2Puts, { atMost: 0.1 }, "");
    verdict("webhook16: DO calls per event", wh16.ops.perEvent.doCalls, { atMost: 1 }, "");
  }
  // The goal is met by the compact layout (stateKeys "hashed"); text keys cost their length on top, shown beside it.
  for (const t of ["edge-dedup-hashed", "edge-dedup"] as const) {
    const keyCell = cells.filter((c) => c.target === t && c.state?.bytesPerKey != null).sort((a, b) => b.state!.rows - a.state!.rows)[0];
    if (keyCell)
      verdict(`${t}: bytes per remembered key (${keyCell.load}, ${fmt(keyCell.state!.rows)} keys)`, keyCell.state!.bytesPerKey, { atMost: 40 }, " B");
  }

  console.log("\nGoals");
  if (PARTITIONS !== GOAL_PARTITIONS) console.log(`  (set for streams of ${GOAL_PARTITIONS} partitions; this run's have ${PARTITIONS}: measured, not judged)`);
  for (const v of verdicts) {
    const status = v.pass === null ? "SKIP" : v.pass ? "PASS" : "WARN";
    console.log(
      `  ${status}  ${v.name}: ${v.value === null ? "not measured" : fmt(v.value, v.value < 10 ? 3 : 1)} (goal ${v.goal}${v.detail ? `; ${v.detail}` : ""})`,
    );
  }
  for (const s of skipped) console.log(`  SKIP  ${s}`);
  console.log(`  correctness: ${failures.length === 0 ? "every target's answers and state matched the data sent" : `${failures.length} check(s) FAILED`}`);

  // ---- files
  const dir = outDir();
  const result = {
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    node: process.version,
    cpus: cpus().length,
    loadavg: loadavg(),
    prices: PRICES,
    settings: {
      cellSeconds: CELL_MS / 1000,
      rounds: ROUNDS,
      partitions: PARTITIONS,
      warmSeconds: WARM_MS / 1000,
      duplicateShare: DUPLICATE_SHARE,
      ids: RANDOM_IDS ? "random" : "sequential",
      loads,
      targets: targetNames,
      redis: redisVersion,
    },
    cells,
    ratios,
    roundRatios,
    verdicts,
    skipped,
    failures,
  };
  writeFileSync(join(dir, "result.json"), JSON.stringify(result, null, 2) + "\n");
  const subtitle = `${result.startedAt.slice(0, 16).replace("T", " ")} UTC, ${CELL_MS / 1000} s per cell, ${cpus().length} CPUs, Node ${process.version}; requests/s = events/s ÷ batch size`;
  writeFileSync(join(dir, "chart.svg"), chart(cells, loads, targetNames, subtitle));
  console.log(`\n  results: ${join(dir, "result.json")}\n  chart:   ${join(dir, "chart.svg")}`);
  console.log(`  finished in ${fmt((Date.now() - started) / 1000, 1)} s`);
  if (failures.length > 0 || (STRICT && verdicts.some((v) => v.pass === false))) process.exitCode = 1;
}

main().catch((e: unknown) => {
  console.error(`\nbench failed: ${e instanceof Error ? e.message : String(e)}`);
  killEverything();
  process.exit(1);
});

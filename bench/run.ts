/**
 * `npm run bench`: edge-dedup against what a user could run instead, side by
 * side on this machine in one run, every target driven by the SAME load
 * generator (closed loop: N clients, each sends its next request when the last
 * one answered; a time budget per cell):
 *
 *   edge-dedup   the real Worker under `wrangler dev --define __OPCOUNT__:true`
 *                (a stream with 8 partitions or BENCH_PARTITIONS, key ["id"], eventTime "ts",
 *                watermarkDelay "1 hour", a life load's "4 minutes"); its operation counters
 *                (src/instrument/opcount.ts, GET /__opcount) give DO calls, SQL statements
 *                and R2 operations per request and per event.
 *   edge-dedup-hashed  the same server, streams with stateKeys "hashed"
 *                (compact state: 64-bit key hashes instead of key text).
 *   one-shard    with BENCH_SHARDS above 1 only: the same server, streams of one
 *                shard (no "shards" field), so that S shards and one are measured
 *                side by side in one run (edge-dedup/one-shard).
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
 * State storage a month is priced apart: keys remembered at steady state
 * (distinct events/s × 2 × delay, within-watermark) × bytes per key ×
 * $0.20/GB-month; and the seed's sizing (50,000 events/s, 20% duplicates,
 * 2-hour delay) is priced all in, USD a day, from a life load's counted
 * operations per event and bytes per key (goal ≤ $400/day).
 *
 * Classic loads: 500-event batches from 4 clients; 1 event per request from 16
 * and from 64 clients (the webhook case). Events are {id, ts, v} with ~20% of
 * ids repeating one of the last 500 new ids (so ~20% duplicates; a repeat
 * carries its first copy's ts), event times 1 ms apart starting two hours ago,
 * delay 1 hour (never late, never evicted during a run: no expiry is counted).
 *
 * Life loads (batch500x4-life, webhook16-life: the same batch sizes and
 * clients): a key's whole life, its expiry included. The stream's delay is 4
 * minutes (the least whose expiry buckets are a quarter of it, as at long
 * delays); event time runs at 240× the time the cell spends driving (still
 * between rounds), so a key lives 2 s of the cell and most are forgotten
 * while the load runs; a repeat is of an id first sent within a quarter of
 * the delay, with its first copy's event time, so it is a duplicate, not
 * late. After the cell the watermark walks on in steps shorter than a bucket
 * (one event each, each bucket entered and copied for eviction as at steady
 * state), then one event 1 hour ahead moves it past every expiry; the cell
 * waits (bounded) until the stream holds only that event's key. The counters
 * include all of it. Bytes per remembered key = (state bytes at the cell's
 * end − once all was forgotten) ÷ keys: the empty partitions left out (goals:
 * ≤ 20 B hashed, ≤ 20 B + the key's text). They run on edge-dedup,
 * edge-dedup-hashed, baseline and echo (the floor); other targets skip them.
 *
 * The delivery load (deliver16, issue #30; bench/deliver.ts): webhook16's
 * ingest (1 event per request, 16 clients, one timed run of the cell's
 * seconds) into an edge-dedup stream with ONE HTTP destination, whose handler
 * (node:http on 127.0.0.1 in the bench's process) answers 200 after 100 ms
 * and verifies nothing: it notes arrivals and distinct webhook-ids. It prints
 * ingested rows/s (distinct rows committed ÷ the ingest's duration), rows
 * delivered by the end of ingest (÷ the same duration), the rate while
 * delivering (those rows ÷ the time from the first arrival to the end of
 * ingest) and its ratio to the ingest (goal ≥ 1.0×: delivery keeps up), how
 * long after the last request every row had arrived (goal ≤ 5 s; waited for
 * at most 120 s, else "not drained"), and the destination's lagMs and
 * pending every second, during the cell and after. It runs on edge-dedup
 * only (the others skip it); its cell has no operation counts (the lag
 * readings are requests too). The destination is deleted at the cell's end.
 *
 * edge-dedup's counts include its background work for the cell's stream: what
 * runs between rounds (after a life round, a settle for the eviction its last
 * commits asked for) and, after the cell, until its outbox has flushed (small
 * micro-batches reach R2 in outbox flushes, seconds after their commit). The
 * bench's own state reads are taken out (their cost is measured once on an
 * idle server). Both edge-dedup targets share one server and its counters:
 * one stream's later background work (an outbox flush 10 s on) can land in
 * the other's round.
 *
 * Correctness: every answer must be a 200 and every row accounted for
 * (emitted + duplicates + late == sent, none rejected), late only where the
 * answers' own watermarks allow; where no row could be late, emitted ==
 * distinct ids sent and duplicates == sent − distinct exactly. Each target's
 * state must hold exactly the distinct keys (a life load: only the far-ahead
 * event's once the tail is done; edge-dedup: GET /v1/streams/{s}; ceiling: its
 * /state route; redis: DBSIZE) and have recorded every batch. A broken target
 * fails the bench (exit code 1). Goals print PASS/WARN; BENCH_STRICT=1 turns a
 * WARN into exit code 1 too.
 *
 * Environment:
 *   BENCH_OUT=dir           where result.json and chart.svg go (created if
 *                           missing); default: a new directory under the system
 *                           temp dir, kept and printed at the end
 *   BENCH_CELL_SECONDS=8    timed seconds per (target, load) cell, split into
 *   BENCH_ROUNDS=2          interleaved rounds (targets A B C, then C B A)
 *   BENCH_TARGETS=edge-dedup,redis,ceiling   a subset, while developing
 *   BENCH_LOADS=batch500x4,webhook16,webhook64,batch500x4-life,webhook16-life,deliver16,rescale8to16
 *                           (also: webhook1, webhook10, webhook100). rescale8to16 runs last, on a
 *                           server of its own (bench/rescale.ts; RESCALE_KEYS_PER_PARTITION=100000
 *                           keys per old partition, 10000 for a quick look): keys moved/s, the
 *                           longest ingest pause (goal ≤ 1 s) and events/s during ÷ before (≥ 0.5×)
 *   BENCH_LANES=n           deliver16's destination asks for n lanes (1–64); unset:
 *                           no "lanes" field (the service's default)
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
 *   BENCH_SHARDS=S          1–64: edge-dedup's (hashed's, baseline's) streams are PUT with
 *                           "shards": S, Coordinators sharing the stream's ingest; unset
 *                           or 1: no "shards" field (a server without shards still runs).
 *                           Every edge-dedup cell prints its hottest object: of the DO
 *                           calls to the stream's objects (named the stream, "{stream}/…"
 *                           or "{stream}#…"), the largest one object's share, which
 *                           object, and its calls/s; webhook64's goal with S ≥ 4: ≤ 0.30
 *   BENCH_STRICT=1
 *
 * Safety: every server (wrangler dev ×2, redis-server, the Redis script; the
 * delivery handler listens on 127.0.0.1 in the bench's process) runs
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
import { createClient, type Outcome, type StreamBody } from "../src/client/index.ts";
import type { MicroBatchTimes } from "../src/instrument/batch-timing.ts";
import { rng } from "../test/support/rng.ts";
import { KEYS_PER_PARTITION, measureRescale, RESCALE_CELL_MAX_MS, RESCALE_GOALS, type RescaleResult } from "./rescale.ts";
import { DELIVER_CELL_EXTRA_MS, DELIVER_GOALS, DELIVER_MIN_MS, DRAIN_TIMEOUT_MS, type DeliveryResult, measureDelivery, printDelivery } from "./deliver.ts";
import { costOf, DAYS_PER_MONTH, PRICES, storagePerMonth } from "./pricing.ts";
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
  sleep,
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
/** The watchdog's bound on a whole run; the default one should take ~7 minutes on this 2-core machine (by its cells' times). */
const TOTAL_BUDGET_MS = 600_000;
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

/** The Coordinator shards of this run's edge-dedup streams (1: the field is left out, so today's server accepts the stream). */
const SHARDS = shardsOf(process.env.BENCH_SHARDS);
/** webhook64 with this many shards or more: its hottest object may take at most this share of the stream's DO calls. */
/**
 * Ingest shards' goals (issue #31), with S ≥ 4: webhook64's hottest object; and beside one shard in the same run
 * (the one-shard target), webhook64's and batch500x4's events/s and webhook64's rows written per event.
 */
const SHARDED_GOAL = { shards: 4, hottestShare: 0.3, eventsRatio: 0.9, rowsRatio: 1.1 };

function shardsOf(v: string | undefined): number {
  if (v === undefined || v === "") return 1;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new Error(`BENCH_SHARDS: a whole number from 1 to 256, not ${JSON.stringify(v)}`);
  return n;
}

/** The classic loads' stream delay: their keys outlive the run (never evicted). */
const CLASSIC_DELAY_MS = HOUR;
/**
 * The life loads' stream delay: 4 minutes, the least whose expiry buckets
 * are a quarter of it (a bucket is at least a minute wide,
 * src/stream/expiry-buckets.ts), so a partition holds its keys in ~9 live
 * buckets and copies one at a time for eviction, as at the seed's 2 hours.
 * (At 10 seconds the one-minute bucket holds every live key, and so does
 * the eviction's copy: bytes per key ~1.6× a long delay's.)
 */
const LIFE_DELAY_MS = 240_000;
/** The life streams' expiry bucket: delay / 4. */
const LIFE_BUCKET_MS = LIFE_DELAY_MS / 4;
/**
 * A life load's event time runs this many times as fast as the time its cell
 * spends driving: a key's life (2 × delay of event time, within-watermark)
 * is then 2 s of the cell, so most keys are forgotten while the load runs.
 * It stands still between rounds, so the other targets' rounds make no jump.
 */
const LIFE_CLOCK_RATE = 240;
/** How far behind the newest event time a repeat's first copy may be: well within the delay, so a repeat is a duplicate, not late. */
const LIFE_REPEAT_WINDOW_MS = LIFE_DELAY_MS / 4;
/**
 * After a life cell the watermark walks through the keys' remaining
 * expiries, one event a step, each step shorter than a bucket: every bucket
 * is then entered and copied for eviction, as at steady state (one jump
 * would delete the buckets ahead by range, their keys never copied). A step
 * waits for the eviction fan-out its commit asks for (200 ms later,
 * EVICTION_DELAY_MS in src/coordinator/alarms.ts).
 */
const WALK_STEP_MS = Math.floor(0.9 * LIFE_BUCKET_MS);
const WALK_STEPS = Math.ceil((2 * LIFE_DELAY_MS) / WALK_STEP_MS) + 1;
const WALK_PAUSE_MS = 300;
/** Then one event this far ahead of the newest: past every expiry, the walk's included; within maxEventTimeSkew of the server clock. */
const FAR_AHEAD_MS = HOUR;
/** How long a life cell's stream may take to forget its keys after the far-ahead event, and how often it is asked. */
const FORGET_TIMEOUT_MS = 30_000;
const FORGET_POLL_MS = 250;
/** After each counted round of a life load: the eviction the round's last commits asked for (200 ms later) lands in that round's counts. */
const LIFE_SETTLE_MS = 1_000;
/** The targets that have a watermark and forget keys (echo: the floor); the others skip the life loads. */
const LIFE_TARGETS: readonly TargetName[] = ["edge-dedup", "edge-dedup-hashed", "one-shard", "baseline", "echo"];
/** The delivery loads run on edge-dedup alone (the others have no destinations, or share its server). */
const DELIVER_TARGETS: readonly TargetName[] = ["edge-dedup"];
/** The edge-dedup server's key for sealing destinations' signing secrets (an http destination needs one). */
const CREDENTIALS_KEY = "bench-credentials-key-0123456789abcdef";

interface Load {
  name: string;
  label: string;
  batch: number;
  clients: number;
  /** a key's whole life in the cell: a 4-minute delay, event times that advance (LIFE_CLOCK_RATE), every key forgotten at the end */
  life?: true;
  /** ingest into a stream with one HTTP destination, its delivery measured (bench/deliver.ts); edge-dedup only */
  deliver?: true;
  /** an online rescale under this load, on a server of its own after the other cells (bench/rescale.ts); edge-dedup only */
  rescale?: true;
}
const ALL_LOADS: Load[] = [
  { name: "batch500x4", label: "500-event batches, 4 clients", batch: 500, clients: 4 },
  { name: "webhook16", label: "1 event/request, 16 clients", batch: 1, clients: 16 },
  { name: "webhook64", label: "1 event/request, 64 clients", batch: 1, clients: 64 },
  { name: "batch500x4-life", label: "500-event batches, 4 clients, keys expiring", batch: 500, clients: 4, life: true },
  { name: "webhook16-life", label: "1 event/request, 16 clients, keys expiring", batch: 1, clients: 16, life: true },
  { name: "deliver16", label: "1 event/request, 16 clients, delivered to a 100 ms handler", batch: 1, clients: 16, deliver: true },
  {
    name: "rescale8to16",
    label: `1 event/request, 16 clients, while 8 → 16 partitions holding ${KEYS_PER_PARTITION.toLocaleString("en-US")} keys each`,
    batch: 1,
    clients: 16,
    rescale: true,
  },
  // Not in the default run: R2 writes per event by concurrency (README), e.g.
  // BENCH_TARGETS=edge-dedup BENCH_LOADS=webhook1,webhook10,webhook100 npm run bench
  { name: "webhook1", label: "1 event/request, 1 client", batch: 1, clients: 1 },
  { name: "webhook10", label: "1 event/request, 10 clients", batch: 1, clients: 10 },
  { name: "webhook100", label: "1 event/request, 100 clients", batch: 1, clients: 100 },
];
const DEFAULT_LOADS = "batch500x4,webhook16,webhook64,batch500x4-life,webhook16-life,deliver16,rescale8to16";
const delayOf = (load: Load) => (load.life ? LIFE_DELAY_MS : CLASSIC_DELAY_MS);
type TargetName = "edge-dedup" | "edge-dedup-hashed" | "one-shard" | "redis" | "ceiling" | "echo" | "echo-do" | "echo-sql" | "baseline";
const ALL_TARGETS: TargetName[] = ["edge-dedup", "edge-dedup-hashed", "one-shard", "redis", "ceiling", "echo", "echo-do", "echo-sql", "baseline"];
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

/** `judge` false: printed, not judged (e.g. too few keys for the figure to mean much). */
function verdict(name: string, value: number | null, goal: { atLeast?: number; atMost?: number }, unit = "×", detail?: string, judge = true): void {
  // Goals hold streams of GOAL_PARTITIONS partitions: another count is measured, not judged.
  const judged = judge && value !== null && Number.isFinite(value) && PARTITIONS === GOAL_PARTITIONS;
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

/** A row as sent: whether it is its id's first copy (the others repeat a recent id) */
interface Sent {
  event: Event;
  first: boolean;
}

class Workload {
  private readonly prefix: string;
  private readonly random: () => number;
  private readonly life: boolean;
  private readonly base: number;
  /** the last RECENT_IDS new ids, a ring from `oldest` on: their event times never go down */
  private readonly recent: Event[] = [];
  private oldest = 0;
  /** a life load's clock: ms spent driving in earlier rounds, and since when the current round drives (null: paused) */
  private drivenMs = 0;
  private drivingSince: number | null = null;
  sent = 0;
  distinct = 0;
  /** the newest event time sent */
  newest = 0;
  /** the distinct ids' state keys as a text partition stores them (their JSON array), bytes summed */
  keyTextBytes = 0;
  /** requests made with this workload: numbers the Idempotency-Keys */
  requests = 0;

  constructor(prefix: string, seed: number, life = false) {
    this.prefix = prefix;
    this.random = rng(seed);
    this.life = life;
    // Classic loads: 1 ms apart from two hours ago, never late and never evicted. Life loads: at LIFE_CLOCK_RATE, from as far
    // back as a cell runs them ahead, so that event times stay near the server's clock (maxEventTimeSkew).
    this.base = life ? Date.now() - LIFE_CLOCK_RATE * CELL_MS : Date.now() - 2 * HOUR;
  }

  /** A round starts driving this workload: a life load's event time runs from now. */
  resume(): void {
    this.drivingSince ??= performance.now();
  }

  /** The round ends: a life load's event time stands still until the next one. */
  pause(): void {
    if (this.drivingSince !== null) this.drivenMs += performance.now() - this.drivingSince;
    this.drivingSince = null;
  }

  private eventTime(i: number): number {
    if (!this.life) return this.base + i;
    const driven = this.drivenMs + (this.drivingSince === null ? 0 : performance.now() - this.drivingSince);
    return this.base + Math.floor(LIFE_CLOCK_RATE * driven);
  }

  /** The recent ids a row of event time `ts` may repeat: those first sent within LIFE_REPEAT_WINDOW_MS (a life load), else all. */
  private repeatableFrom(ts: number): number {
    if (!this.life) return 0;
    const at = (k: number) => this.recent[(this.oldest + k) % this.recent.length];
    let [lo, hi] = [0, this.recent.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (at(mid).ts < ts - LIFE_REPEAT_WINDOW_MS) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  next(): Sent {
    const i = this.sent++;
    const ts = this.eventTime(i);
    const from = this.repeatableFrom(ts);
    if (this.recent.length > from && this.random() < DUPLICATE_SHARE) {
      // A repeat is a retry of the same event: its first copy's event time, a new v (volatile).
      const k = from + Math.floor(this.random() * (this.recent.length - from));
      const first = this.recent[(this.oldest + k) % this.recent.length];
      return { event: { id: first.id, ts: first.ts, v: i }, first: false };
    }
    // Sequential ids insert where the last one did; random ones (most real event ids) anywhere in the key order.
    const id = RANDOM_IDS
      ? `${this.prefix}-${Math.floor(this.random() * 2 ** 48)
          .toString(16)
          .padStart(12, "0")}-${i}`
      : `${this.prefix}-${i}`;
    const event = { id, ts, v: i };
    if (this.recent.length < RECENT_IDS) this.recent.push(event);
    else {
      this.recent[this.oldest] = event;
      this.oldest = (this.oldest + 1) % RECENT_IDS;
    }
    this.distinct++;
    this.newest = Math.max(this.newest, ts);
    this.keyTextBytes += Buffer.byteLength(JSON.stringify([id]));
    return { event, first: true };
  }

  body(n: number): { text: string; rows: Sent[] } {
    const rows = Array.from({ length: n }, () => this.next());
    // One JSON object, as a webhook sends it, or an array.
    return { text: JSON.stringify(n === 1 ? rows[0].event : rows.map((r) => r.event)), rows };
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

/** What the load generator tallies of an answer; the Redis script and the ceiling answer these fields too, but no watermarks. */
type Tally = Pick<Outcome, "input" | "emitted" | "duplicates" | "late" | "rejected"> & Partial<Pick<Outcome, "watermark" | "watermarkAfter">>;

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
  /** late rows the answers' watermarks make certain, and possible (lateBounds); of the possible, first copies */
  lateAtLeast: number;
  lateAtMost: number;
  firstsLateAtMost: number;
  /** answers whose late count is outside their own bounds */
  lateOutOfBounds: number;
  errors: number;
  firstError: string | null;
  latencies: number[];
}

/**
 * Which of a request's rows its answer allows to be late: a row whose event
 * time is at or below the watermark the batch was judged by must be; one at
 * or below the watermark after its commit may be (a partition judges by the
 * higher of its own watermark and the batch's, and its own is never above
 * the global one after this commit); no other row may. Targets without
 * watermarks (ceiling, Redis, echo-sql) allow none.
 */
function lateBounds(rows: Sent[], o: Tally): { atLeast: number; atMost: number; firstsAtMost: number } {
  const [judgedBy, after] = [o.watermark ?? Number.NEGATIVE_INFINITY, o.watermarkAfter ?? Number.NEGATIVE_INFINITY];
  let [atLeast, atMost, firstsAtMost] = [0, 0, 0];
  for (const r of rows) {
    if (r.event.ts <= judgedBy) atLeast++;
    if (r.event.ts <= after) {
      atMost++;
      if (r.first) firstsAtMost++;
    }
  }
  return { atLeast, atMost, firstsAtMost };
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
  lateAtLeast: 0,
  lateAtMost: 0,
  firstsLateAtMost: 0,
  lateOutOfBounds: 0,
  errors: 0,
  firstError: null,
  latencies: [],
});

/** Adds `b` (a later round on the same stream and workload) to `a`. */
function mergeDrive(a: Drive, b: Drive): void {
  for (const k of [
    "ms",
    "requests",
    "input",
    "emitted",
    "duplicates",
    "late",
    "rejected",
    "lateAtLeast",
    "lateAtMost",
    "firstsLateAtMost",
    "lateOutOfBounds",
    "errors",
  ] as const)
    a[k] += b[k];
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
  work.resume();
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
            reply = await post(agent, url, body.text, headers);
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
          const late = lateBounds(body.rows, o);
          d.lateAtLeast += late.atLeast;
          d.lateAtMost += late.atMost;
          d.firstsLateAtMost += late.firstsAtMost;
          if (o.late < late.atLeast || o.late > late.atMost) d.lateOutOfBounds++;
        }
      }),
    );
  } finally {
    work.pause();
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
  /** `BINDING name` → calls, by the object called (src/instrument/opcount.ts); a server of an older release has none */
  doCallsByObject?: Record<string, number>;
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

interface TargetState {
  rows: number;
  bytes: number | null;
  batches: number | null;
}

interface Target {
  name: TargetName;
  url: string;
  /** creates the stream for a load when the target needs it */
  prepare(stream: string, load: Load): Promise<void>;
  /** distinct keys held, state bytes when known, batches recorded; null: it keeps no state (echo) */
  state(stream: string): Promise<TargetState | null>;
  takeOpCounts?(): Promise<OpCounts>;
  /** what one state() call adds to the counters (with takeOpCounts): the bench's own reads are taken out of a cell's counts */
  stateReadCounts?: OpCounts;
  /** the stream stateReadCounts was read on: its objects' names are the cell's stream's, once renamed */
  stateReadStream?: string;
  stop(): Promise<void>;
}

const auth = { authorization: `Bearer ${TOKEN}` };
const sum = (t: Record<string, number>) => Object.values(t).reduce((a, b) => a + b, 0);

/**
 * An edge-dedup stream for a load. A repeated id is a retry: its v is
 * volatile (and ts, though a repeat carries its first copy's), so it is a
 * duplicate, not a conflict (docs/concepts/same-event.md).
 */
function streamBody(load: Load, stateKeys?: "text" | "hashed", shards = SHARDS): StreamBody {
  const body: StreamBody = {
    key: ["id"],
    eventTime: "ts",
    mode: "within-watermark",
    watermarkDelay: delayOf(load),
    partitions: PARTITIONS,
    ...(stateKeys ? { stateKeys } : {}),
    volatile: ["ts", "v"],
  };
  // Cast: the client's StreamBody has no shards yet (the server learns them in "ingest shards").
  return shards > 1 ? ({ ...body, shards } as StreamBody) : body;
}

/** Whether an object's name (getByName's) is one of `stream`'s: the stream itself, a partition `{stream}/…`, a shard `{stream}#…`. */
const ofStream = (name: string, stream: string) => name === stream || name.startsWith(`${stream}/`) || name.startsWith(`${stream}#`);
/** `BINDING name` (doCallsByObject's key) → its binding and name. */
function objectOf(key: string): { binding: string; name: string } {
  const i = key.indexOf(" ");
  return i < 0 ? { binding: key, name: "" } : { binding: key.slice(0, i), name: key.slice(i + 1) };
}

/** Counts read on stream `from` as if on `to`: a state read's calls, to be taken out of another stream's cell. */
function renamedObjects(counts: OpCounts, from: string, to: string): OpCounts {
  const byObject: Record<string, number> = {};
  for (const [key, n] of Object.entries(counts.doCallsByObject ?? {})) {
    const { binding, name } = objectOf(key);
    byObject[ofStream(name, from) ? `${binding} ${to}${name.slice(from.length)}` : key] = n;
  }
  return { ...counts, doCallsByObject: byObject };
}

interface Hottest {
  /** `BINDING name` of the object with the most calls */
  object: string;
  calls: number;
  /** its calls ÷ all calls to the stream's objects */
  share: number;
  /** its calls ÷ the cell's timed seconds (the counted background work included) */
  callsPerSec: number;
  /** DO calls to the stream's objects, and how many objects took them */
  streamCalls: number;
  objects: number;
}

/** The stream's hottest object: what a single Durable Object must keep up with (null: no calls by object counted). */
function hottestObject(counts: OpCounts, stream: string, seconds: number): Hottest | null {
  const mine = Object.entries(counts.doCallsByObject ?? {}).filter(([key]) => ofStream(objectOf(key).name, stream));
  if (mine.length === 0) return null;
  const streamCalls = mine.reduce((a, [, n]) => a + n, 0);
  const [object, calls] = mine.reduce((a, b) => (b[1] > a[1] ? b : a));
  return { object, calls, share: calls / streamCalls, callsPerSec: calls / seconds, streamCalls, objects: mine.length };
}

/**
 * What one GET /v1/streams/{s} adds to the counters (a Coordinator call that
 * asks every partition), read on a fresh server before any load, when
 * nothing else runs: the second of two reads (the first makes the
 * partitions' tables).
 */
async function measureStateRead(url: string, read: () => Promise<unknown>): Promise<OpCounts> {
  await read();
  await httpJson<OpCounts>("GET", `${url}/__opcount`);
  await read();
  return httpJson<OpCounts>("GET", `${url}/__opcount`);
}

/** One wrangler dev serves both edge-dedup targets (text and hashed keys); the last target to stop stops it. */
let edgeServer: { server: Awaited<ReturnType<typeof startWrangler>>; users: number; stateReadCounts?: OpCounts; stateReadStream?: string } | null = null;

async function startEdgeDedup(name: "edge-dedup" | "edge-dedup-hashed" | "one-shard"): Promise<Target> {
  if (!edgeServer) {
    const server = await startWrangler({
      name: "edge-dedup",
      files: PROJECT_FILES,
      // deliver16's destination POSTs to the bench's handler on 127.0.0.1; an http destination needs the credentials key.
      vars: { ADMIN_TOKEN: TOKEN, CREDENTIALS_KEY, ALLOW_LOOPBACK_DESTINATIONS: "true" },
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
  const state = async (stream: string) => {
    const s = await api.getStream(stream);
    return { rows: s.state.rows, bytes: s.state.bytes, batches: s.batches.committed };
  };
  if (!shared.stateReadCounts) {
    const stream = `state-read-${runId}`;
    await api.putStream(stream, streamBody(ALL_LOADS[0]));
    shared.stateReadCounts = await measureStateRead(server.url, () => state(stream));
    shared.stateReadStream = stream;
  }
  return {
    name,
    url: server.url,
    prepare: async (stream, load) => void (await api.putStream(stream, streamBody(load, stateKeys, name === "one-shard" ? 1 : SHARDS))),
    state,
    takeOpCounts: () => httpJson<OpCounts>("GET", `${server.url}/__opcount`),
    stateReadCounts: shared.stateReadCounts,
    stateReadStream: shared.stateReadStream,
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
    prepare: async (stream, load) => void (await api.putStream(stream, streamBody(load))),
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
  late: number;
  errors: number;
  /** what the target held at the end (a life cell: after the far-ahead event, so no bytes per key) */
  state: { rows: number; bytes: number | null; batches: number | null; bytesPerKey: number | null } | null;
  /** a life load's keys over their whole life (stateful targets) */
  life?: Life;
  /** a deliver load's destination: ingest and delivery rates, drain, the lag series (bench/deliver.ts) */
  delivery?: DeliveryResult;
  ops?: {
    counts: OpCounts;
    perRequest: { doCalls: number; sql: number; r2Puts: number };
    perEvent: { doCalls: number; sql: number; r2Puts: number; rowsWritten: number; rowsRead: number };
    /** USD per million events, from the counted operations (bench/pricing.ts) */
    costPerMillionEvents: ReturnType<typeof costOf>;
    /** the cell's stream's most called object; null: the server counts no calls by object */
    hottest: Hottest | null;
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
  await target.prepare(warm, load);
  const w = await drive(target, warm, load, WARM_MS, new Workload(warm, seed + 1_000, load.life));
  check(w.errors === 0, `${target.name} ${load.name} warm-up: ${w.errors} failed requests (${w.firstError})`);
  const stream = `bench-${target.name}-${load.name}-${runId}-${streamSeq++}`;
  await target.prepare(stream, load);
  return { target, load, stream, work: new Workload(stream, seed, load.life), d: emptyDrive(), counts: null, rounds: [] };
}

/**
 * A deliver cell's timed run: one drive of the cell's whole time, at least DELIVER_MIN_MS (only
 * edge-dedup runs it, so there is nothing to interleave), its destination
 * made and measured around it. No operation counts: the lag readings are
 * requests to the same Worker (the next cell's first take drops them).
 */
async function runDeliverCell(c: Pending): Promise<DeliveryResult> {
  return measureDelivery({
    url: c.target.url,
    token: TOKEN,
    stream: c.stream,
    ingest: async () => {
      const d = await drive(c.target, c.stream, c.load, Math.max(CELL_MS, DELIVER_MIN_MS), c.work);
      c.rounds.push((d.requests * c.load.batch) / (d.ms / 1000));
      mergeDrive(c.d, d);
      return d;
    },
  });
}

/** One timed round; operation counters are taken around it, so they see only its requests. */
async function runRound(c: Pending, ms: number): Promise<void> {
  // Work done between rounds is this stream's background work (outbox flushes, eviction): it counts too.
  const between = await c.target.takeOpCounts?.();
  if (between && c.counts) mergeCounts(c.counts, between);
  const d = await drive(c.target, c.stream, c.load, ms, c.work);
  if (c.load.life && c.target.takeOpCounts) await sleep(LIFE_SETTLE_MS);
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

const COUNT_TABLES = ["doCalls", "doCallsByObject", "sql", "rowsWritten", "rowsRead", "rowsWrittenBy", "rowsReadBy", "r2", "microBatches"] as const;

function mergeCounts(into: OpCounts, more: OpCounts): void {
  into.requests += more.requests;
  for (const k of COUNT_TABLES) {
    // Every table here, micro-batch times included, is names to numbers that add up.
    const to = (into[k] ??= {} as never) as Record<string, number>;
    for (const [op, n] of Object.entries(more[k] ?? {})) to[op] = (to[op] ?? 0) + n;
  }
}

/** Takes `less` (the bench's own read) out of `from`; an entry that reaches 0 goes. */
function subtractCounts(from: OpCounts, less: OpCounts): void {
  from.requests = Math.max(0, from.requests - less.requests);
  for (const k of COUNT_TABLES) {
    const to = (from[k] ?? {}) as Record<string, number>;
    for (const [op, n] of Object.entries(less[k] ?? {})) {
      if (!(op in to)) continue;
      to[op] = Math.max(0, to[op] - n);
      if (to[op] === 0) delete to[op];
    }
  }
}

/**
 * edge-dedup writes small micro-batches to R2 later, in outbox flushes (due
 * after FLUSH_AFTER_MS); a cell waits for them so that their R2 writes and
 * calls count against the events that caused them.
 */
const DRAIN_MS = 12_000;
/** What a life cell's stream keeps once every key has expired: the far-ahead event's key. */
const FAR_AHEAD_EVENTS = 1;
/** The requests a life cell's tail adds: the walk's steps and the far-ahead event. */
const TAIL_REQUESTS = WALK_STEPS + FAR_AHEAD_EVENTS;
/** SQLite's page, and the tables a partition's size follows its keys in (keys, and front: the eviction's copy of a bucket) */
const PAGE_BYTES = 4096;
const KEY_TABLES = 2;

/** A life cell's keys over their whole life: what the stream held at the cell's end, and once it had forgotten them all. */
interface Life {
  delayMs: number;
  /** the state before the far-ahead event */
  end: TargetState;
  /** after it, once only the far-ahead event's key was left; null: not within FORGET_TIMEOUT_MS */
  forgotten: TargetState | null;
  forgetMs: number | null;
  /** (end − forgotten) bytes ÷ keys: what a remembered key adds, the partitions' empty tables left out */
  bytesPerKey: number | null;
  /** how far a partly filled last page in each key table of each partition could move bytesPerKey */
  pageRoundingBytes: number | null;
  /** the mean state key's text (its JSON array, as a text partition stores it), bytes */
  keyTextBytes: number;
}

/** The target's state; with counters, the read's own operations are kept out of the cell's counts (what ran meanwhile stays in). */
async function readState(c: Pending): Promise<TargetState | null> {
  const { target } = c;
  if (!c.counts || !target.takeOpCounts || !target.stateReadCounts) return target.state(c.stream);
  mergeCounts(c.counts, await target.takeOpCounts());
  const state = await target.state(c.stream);
  const meanwhile = await target.takeOpCounts();
  const read = target.stateReadStream ? renamedObjects(target.stateReadCounts, target.stateReadStream, c.stream) : target.stateReadCounts;
  subtractCounts(meanwhile, read);
  mergeCounts(c.counts, meanwhile);
  return state;
}

/** One event of a life cell's tail; checks that it was emitted. */
async function sendTailEvent(c: Pending, event: Event): Promise<void> {
  const headers = { ...auth, "content-type": "application/json", "idempotency-key": event.id };
  const a = await http("POST", `${c.target.url}/v1/streams/${c.stream}/events`, { body: JSON.stringify(event), headers });
  const o = a.status === 200 ? (JSON.parse(a.text) as Tally) : null;
  check(o?.emitted === 1, `${c.target.name} ${c.load.name}: the tail event ${event.id} was not emitted (HTTP ${a.status} ${a.text.slice(0, 300)})`);
}

/**
 * The end of a life cell: the state as the load left it, then the tail.
 * The watermark walks through the keys' remaining expiries (WALK_STEP_MS),
 * then one event FAR_AHEAD_MS ahead of the newest moves it past every
 * expiry left; the Coordinator's eviction reaches every partition holding
 * keys due (src/coordinator/upkeep.ts). Waits, bounded, until only that
 * event's key is left, so that the cell's counters include every key's
 * expiry. Null for a target that keeps no state (echo).
 */
async function forgetEveryKey(c: Pending): Promise<Life | null> {
  const end = await readState(c);
  if (end === null) return null;
  const newest = c.work.newest;
  for (let k = 1; k <= WALK_STEPS; k++) {
    await sendTailEvent(c, { id: `${c.stream}-walk-${k}`, ts: newest + k * WALK_STEP_MS, v: -k });
    await sleep(WALK_PAUSE_MS);
  }
  await sendTailEvent(c, { id: `${c.stream}-far-ahead`, ts: newest + FAR_AHEAD_MS, v: 0 });
  const t0 = performance.now();
  let forgotten: TargetState | null = null;
  for (let poll = 0; poll < FORGET_TIMEOUT_MS / FORGET_POLL_MS && performance.now() - t0 < FORGET_TIMEOUT_MS; poll++) {
    await sleep(FORGET_POLL_MS);
    const s = await readState(c);
    if (s && s.rows <= FAR_AHEAD_EVENTS) {
      forgotten = s;
      break;
    }
  }
  const keys = end.rows - (forgotten?.rows ?? 0);
  const measured = forgotten !== null && end.bytes !== null && forgotten.bytes !== null && keys > 0;
  return {
    delayMs: delayOf(c.load),
    end,
    forgotten,
    forgetMs: forgotten ? performance.now() - t0 : null,
    bytesPerKey: measured ? (end.bytes! - forgotten!.bytes!) / keys : null,
    pageRoundingBytes: measured ? (KEY_TABLES * PAGE_BYTES * PARTITIONS) / keys : null,
    keyTextBytes: c.work.distinct > 0 ? c.work.keyTextBytes / c.work.distinct : 0,
  };
}

/**
 * The answers against the data sent. Every row is accounted for, and late
 * only where the answers' own watermarks allow (lateBounds): where none
 * could be, emitted == distinct ids and duplicates == the repeats exactly.
 * If a first copy could have been late (its request held up ~1 s behind
 * later ones, in a life load), a repeat may be emitted in its place, and
 * emitted is checked against that range instead, with a note.
 */
function checkAnswers(what: string, d: Drive, dedups: boolean): void {
  check(d.errors === 0, `${what}: ${d.errors} of ${d.requests} requests failed (first: ${d.firstError})`);
  if (!dedups) {
    check(d.input === d.events, `${what}: input ${d.input}/${d.events}`);
    return;
  }
  const repeats = d.events - d.distinct;
  const emittedOk = d.firstsLateAtMost === 0 ? d.emitted === d.distinct : d.emitted <= d.distinct && d.emitted >= d.distinct - d.firstsLateAtMost;
  check(
    d.input === d.events && d.rejected === 0 && d.lateOutOfBounds === 0 && d.emitted + d.duplicates + d.late === d.events && emittedOk,
    `${what}: input ${d.input}/${d.events}, emitted ${d.emitted}/${d.distinct} distinct, duplicates ${d.duplicates}/${repeats} repeats, ` +
      `late ${d.late} (the answers allow ${d.lateAtLeast}–${d.lateAtMost}; ${d.lateOutOfBounds} answers outside theirs), rejected ${d.rejected}`,
  );
  if (d.lateAtMost > 0)
    console.log(
      `  note: ${what}: ${d.late} rows late, of ${d.lateAtMost} the answers' watermarks allow (${d.firstsLateAtMost} first copies): ` +
        "requests held up behind later ones; checked against those bounds",
    );
}

/** Checks the cell's answers and the target's state against the data sent. */
async function finishCell(c: Pending): Promise<Cell> {
  const { d, target, load } = c;
  const life = load.life ? await forgetEveryKey(c) : null;
  if (c.counts && target.takeOpCounts) {
    await sleep(DRAIN_MS);
    mergeCounts(c.counts, await target.takeOpCounts());
  }
  const state = await readState(c);
  const what = `${target.name} ${load.name}`;
  checkAnswers(what, d, state !== null);
  if (state && life)
    check(
      life.forgotten !== null && state.rows === FAR_AHEAD_EVENTS,
      `${what}: ${fmt(life.end.rows)} keys at the cell's end, ${fmt(state.rows)} left after the tail (expected ${FAR_AHEAD_EVENTS} within ${FORGET_TIMEOUT_MS / 1000} s)`,
    );
  else if (state) check(state.rows === d.distinct, `${what}: the target's state holds ${state.rows} keys, expected ${d.distinct}`);
  const requests = d.requests + (life ? TAIL_REQUESTS : 0);
  if (state && state.batches !== null) check(state.batches === requests, `${what}: ${state.batches} batches recorded, expected ${requests}`);

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
    late: d.late,
    errors: d.errors,
    state: state && { ...state, bytesPerKey: !life && state.bytes !== null && state.rows > 0 ? state.bytes / state.rows : null },
    ...(life ? { life } : {}),
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
      hottest: hottestObject(counts, c.stream, cell.seconds),
    };
  }
  const forgottenMeanwhile = life ? `, ${fmt(d.distinct - life.end.rows)} forgotten during the cell` : "";
  console.log(
    `  ${target.name.padEnd(10)} ${fmt(cell.eventsPerSec).padStart(8)} events/s  ${fmt(cell.requestsPerSec, 1).padStart(8)} req/s` +
      `  p50 ${fmt(cell.p50ms, 1)} ms  p99 ${fmt(cell.p99ms, 1)} ms  (${fmt(d.requests)} requests, ${fmt(d.events)} events, ${fmt(d.distinct)} distinct${forgottenMeanwhile})`,
  );
  const hot = cell.ops?.hottest;
  if (hot) console.log(`             hottest object: ${hottestText(hot)}`);
  return cell;
}

// ---------------------------------------------------------------------------
// Output: a table, result.json and chart.svg

const hottestText = (h: Hottest) =>
  `${fmt(h.share, 3)} of the stream's ${fmt(h.streamCalls)} DO calls (${h.objects} objects): ${h.object}, ${fmt(h.callsPerSec)} calls/s`;

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
  "one-shard": "#c05621",
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
// A key's whole life, state storage and the seed's sizing (issue #29)

const LIFE_LOADS = new Set(ALL_LOADS.filter((l) => l.life).map((l) => l.name));
/** Over a key's whole life, its expiry included: rows written per event and USD per million events (edge-dedup, text keys). */
const LIFE_GOALS: Record<string, { rowsWritten: number; usdPerMillion: number }> = {
  "batch500x4-life": { rowsWritten: 0.05, usdPerMillion: 0.1 },
  "webhook16-life": { rowsWritten: 1.3, usdPerMillion: 2.0 },
};
/** Bytes a remembered key may add: hashed keys this, text keys this plus their text. */
const KEY_BYTES_GOAL = 20;
/** The seed's sizing (docs/SCALING.md), priced from a life cell's counted operations and bytes per key. */
const SEED = { eventsPerSec: 50_000, duplicateShare: 0.2, delayMs: 2 * HOUR, goalUsdPerDay: 400 };
/** The load whose figures stand for the seed's producers (batches of 500) in its goal. */
const SEED_LOAD = "batch500x4-life";
/** The targets whose streams keep keys for 2 × delay (within-watermark): their storage is priced. */
const EDGE_TARGETS: readonly TargetName[] = ["edge-dedup", "edge-dedup-hashed", "baseline"];
const usd = (x: number) => `$${x.toFixed(3)}`;

/**
 * Keys a within-watermark stream remembers at steady state: a key stays from
 * its first copy (event time T) until the watermark, the newest event time −
 * delay, reaches its expiry T + delay: while 2 × delay of new ids arrive.
 */
const rememberedKeys = (distinctPerSec: number, delayMs: number) => distinctPerSec * 2 * (delayMs / 1000);
const seedKeys = () => rememberedKeys(SEED.eventsPerSec * (1 - SEED.duplicateShare), SEED.delayMs);

/** What a remembered key adds to a cell's state: measured per key in a life cell, the whole state ÷ keys in a classic one. */
const bytesPerKeyOf = (c: Cell) => (c.life ? c.life.bytesPerKey : (c.state?.bytesPerKey ?? null));

function printLives(cells: Cell[]): void {
  const lives = cells.filter((c) => c.life);
  if (lives.length === 0) return;
  console.log(
    `\nA key's whole life (life loads: a ${fmt(LIFE_DELAY_MS / 60_000)}-minute delay, event time at ${LIFE_CLOCK_RATE}× the cell's driving time;` +
      ` after the cell the watermark walks on in ${WALK_STEPS} steps, then one event ${FAR_AHEAD_MS / HOUR} hour ahead)`,
  );
  table(
    ["load", "target", "distinct", "forgotten during the cell", "keys at the end", "all forgotten in", "bytes/key", "page rounding", "key text", "late"],
    lives.map((c) => {
      const l = c.life!;
      return [
        c.load,
        c.target,
        fmt(c.distinct),
        `${fmt(c.distinct - l.end.rows)} (${fmt((100 * (c.distinct - l.end.rows)) / Math.max(1, c.distinct))}%)`,
        fmt(l.end.rows),
        l.forgetMs === null ? "not in time" : `${fmt(l.forgetMs)} ms`,
        l.bytesPerKey === null ? "n/a" : `${fmt(l.bytesPerKey, 1)} B`,
        l.pageRoundingBytes === null ? "" : `±${fmt(l.pageRoundingBytes, 1)} B`,
        `${fmt(l.keyTextBytes, 1)} B`,
        fmt(c.late),
      ];
    }),
  );
  console.log("  bytes/key = (state bytes at the cell's end − once every key was forgotten) ÷ the keys forgotten: what a remembered key adds,");
  console.log("  the partitions' empty tables left out (SQLite's size counts no free pages); the eviction's copy of the watermark's bucket");
  console.log("  (front, about 1/16 of the live keys on average, as at any delay of 4 minutes or more) counts against them. page rounding:");
  console.log("  a partly filled last page per key table and partition could move it this much: judge a figure only where it is small.");
  console.log("  all forgotten in: from the far-ahead event to the state holding only its key. The rows written and the cost above");
  console.log(`  include every key's expiry (during the cell and in the tail) and the tail's own ${TAIL_REQUESTS} requests and their fan-outs.`);
}

function printStorage(cells: Cell[], loads: Load[]): void {
  const priced = cells.filter((c) => EDGE_TARGETS.includes(c.target) && bytesPerKeyOf(c) !== null);
  if (priced.length === 0) return;
  console.log(`\nState storage a month (keys remembered × bytes/key × $${PRICES.doStorageGbMonth}/GB-month; bench/pricing.ts)`);
  table(
    ["load", "target", "distinct events/s", "delay", "keys remembered", "bytes/key", "GB", "USD/month"],
    priced.map((c) => {
      const delayMs = delayOf(loads.find((l) => l.name === c.load)!);
      const keys = rememberedKeys(c.distinct / c.seconds, delayMs);
      const bytes = keys * bytesPerKeyOf(c)!;
      return [
        c.load,
        c.target,
        fmt(c.distinct / c.seconds),
        `${fmt(delayMs / 1000)} s`,
        fmt(keys),
        fmt(bytesPerKeyOf(c)!, 1),
        fmt(bytes / 1e9, 3),
        usd(storagePerMonth(bytes)),
      ];
    }),
  );
  console.log("  keys remembered = distinct events/s × 2 × delay: within-watermark keeps a key from its first copy (event time T) until");
  console.log("  the watermark (newest event time − delay) reaches its expiry, T + delay. Each load at its stream's delay in real time");
  console.log(`  (a life cell's clock ran ${LIFE_CLOCK_RATE}× faster, so it held 1/${LIFE_CLOCK_RATE} as many). bytes/key: per key in the life loads;`);
  console.log("  the whole state ÷ keys in the others (no key expired there, so no front copy; the empty tables count too).");
}

interface SeedCost {
  target: TargetName;
  load: string;
  rowsWrittenPerEvent: number;
  bytesPerKey: number;
  /** USD per day, by item */
  rowsWritten: number;
  doRequests: number;
  workers: number;
  rowsReadAndR2: number;
  storage: number;
  total: number;
}

/** The seed's sizing priced from each life cell with counters: its operations per event at SEED.eventsPerSec, its bytes per key for seedKeys(). */
function seedCosts(cells: Cell[]): SeedCost[] {
  const eventsPerDay = SEED.eventsPerSec * 86_400;
  return cells
    .filter((c) => c.life?.bytesPerKey != null && c.ops)
    .map((c) => {
      const k = c.ops!.costPerMillionEvents;
      const perDay = (usdPerMillion: number) => (usdPerMillion / 1e6) * eventsPerDay;
      const storage = storagePerMonth(seedKeys() * c.life!.bytesPerKey!) / DAYS_PER_MONTH;
      const items = {
        rowsWritten: perDay(k.rowsWritten),
        doRequests: perDay(k.doRequests),
        workers: perDay(k.workers),
        rowsReadAndR2: perDay(k.rowsRead + k.r2),
        storage,
      };
      return {
        target: c.target,
        load: c.load,
        rowsWrittenPerEvent: c.ops!.perEvent.rowsWritten,
        bytesPerKey: c.life!.bytesPerKey!,
        ...items,
        total: Object.values(items).reduce((a, b) => a + b, 0),
      };
    });
}

function printSeed(seeds: SeedCost[]): void {
  if (seeds.length === 0) return;
  console.log(
    `\nThe seed's sizing: ${fmt(SEED.eventsPerSec)} events/s, ${SEED.duplicateShare * 100}% duplicates, ${SEED.delayMs / HOUR}-hour delay: ${fmt(seedKeys())} keys remembered (USD a day)`,
  );
  table(
    ["target", "from", "rows written/event", "bytes/key", "rows written", "DO requests", "Workers", "rows read + R2", "storage", "total", "goal"],
    seeds.map((s) => [
      s.target,
      s.load,
      fmt(s.rowsWrittenPerEvent, 3),
      fmt(s.bytesPerKey, 1),
      usd(s.rowsWritten),
      usd(s.doRequests),
      usd(s.workers),
      usd(s.rowsReadAndR2),
      usd(s.storage),
      usd(s.total),
      s.load === SEED_LOAD ? `≤ $${SEED.goalUsdPerDay}` : "",
    ]),
  );
  console.log("  Each life cell's counted operations per event (a key's whole life) at the seed's rate, and its bytes per key for the keys");
  console.log(`  the seed's stream remembers; its goal is judged on ${SEED_LOAD} (the seed's producers send batches). Left out, as above: CPU`);
  console.log("  time, DO duration, alarm invocations, R2 storage, free allowances, and the batch ledger's prune (after the idempotency window).");
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  const asked = ALL_LOADS.filter((l) =>
    pick(
      process.env.BENCH_LOADS ?? DEFAULT_LOADS,
      ALL_LOADS.map((x) => x.name),
    ).includes(l.name),
  );
  // The rescale cell runs after the others, alone (it has no per-target cells).
  const rescaleLoads = asked.filter((l) => l.rescale);
  const loads = asked.filter((l) => !l.rescale);
  // A deliver cell may wait for its backlog (bounded): the watchdog allows for it.
  const budgetMs = TOTAL_BUDGET_MS + loads.filter((l) => l.deliver).length * DELIVER_CELL_EXTRA_MS + rescaleLoads.length * RESCALE_CELL_MAX_MS;
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${budgetMs / 1000} s; giving up`);
    killEverything();
    process.exit(1);
  }, budgetMs);
  watchdog.unref();
  let targetNames = pick(process.env.BENCH_TARGETS, ALL_TARGETS);
  console.log(
    `edge-dedup bench (Node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")})`,
  );
  console.log(
    `  ${CELL_MS / 1000} s per cell in ${ROUNDS} interleaved round(s), after ${WARM_MS / 1000} s of warm-up;` +
      ` ~${DUPLICATE_SHARE * 100}% duplicate ids, ${RANDOM_IDS ? "random" : "sequential"} ids; edge-dedup streams of ${PARTITIONS} partition${PARTITIONS === 1 ? "" : "s"}${SHARDS > 1 ? ` and ${SHARDS} shards` : ""}; the same load generator for every target`,
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
  // One shard beside S: only when edge-dedup's streams have several (else it is edge-dedup again).
  if (SHARDS === 1) targetNames = targetNames.filter((t) => t !== "one-shard");

  const targets: Target[] = [];
  const cells: Cell[] = [];
  try {
    console.log("\nStarting the targets");
    for (const name of targetNames) {
      targets.push(
        await (name === "edge-dedup" || name === "edge-dedup-hashed" || name === "one-shard"
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
      const runs = targets.filter((t) => (load.deliver ? DELIVER_TARGETS : load.life ? LIFE_TARGETS : [t.name]).includes(t.name));
      const left = targets.filter((t) => !runs.includes(t)).map((t) => t.name);
      if (left.length > 0) {
        const msg = load.deliver
          ? `${load.name}: ${left.join(", ")} skipped (the delivery load measures edge-dedup's destinations; it runs on ${DELIVER_TARGETS.join(", ")})`
          : `${load.name}: ${left.join(", ")} skipped (no watermark that forgets keys; the load runs on ${LIFE_TARGETS.join(", ")})`;
        console.log(`  SKIP: ${msg}`);
        skipped.push(msg);
      }
      const pending: Pending[] = [];
      if (load.deliver) {
        for (const t of runs) {
          const c = await prepareCell(t, load, 100 * (li + 1));
          const delivery = await runDeliverCell(c);
          const cell = await finishCell(c);
          printDelivery(delivery);
          const what = `${t.name} ${load.name}`;
          check(delivery.foreign === 0, `${what}: ${delivery.foreign} requests at the handler without this stream's webhook-id`);
          check(
            delivery.arrived <= delivery.rowsCommitted,
            `${what}: ${delivery.arrived} distinct webhook-ids arrived for ${delivery.rowsCommitted} rows committed`,
          );
          cells.push({ ...cell, delivery });
        }
        continue;
      }
      for (const t of runs) pending.push(await prepareCell(t, load, 100 * (li + 1)));
      for (let round = 0; round < ROUNDS; round++) {
        for (const c of round % 2 === 0 ? pending : [...pending].reverse()) await runRound(c, CELL_MS / ROUNDS);
      }
      for (const c of pending) cells.push(await finishCell(c));
    }
  } finally {
    for (const t of targets.reverse()) await t.stop().catch(() => undefined);
  }
  // The rescale cell fills its own server with ~KEYS_PER_PARTITION × 8 keys: alone on the machine, once the others are stopped.
  let rescale: RescaleResult | null = null;
  for (const load of rescaleLoads.filter(() => targetNames.includes("edge-dedup"))) {
    console.log(`\n${load.label}`);
    try {
      rescale = await measureRescale();
    } catch (e) {
      check(false, `${load.name}: ${e instanceof Error ? e.message : String(e)}`);
    }
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
      vsOneShard: number | null;
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
      vsOneShard: ratio(l.name, "one-shard"),
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
      ...(SHARDS > 1 ? [`${SHARDS} shards/one`] : []),
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
      ...(SHARDS > 1 ? [r(ratios[l.name].vsOneShard)] : []),
    ]),
  );
  const requestsEach = (c: Cell) => {
    const t = c.ops!.counts.microBatches;
    return t && t.runs > 0 ? t.requests / t.runs : 0;
  };
  // Shards split a load's clients: S shards under webhook64 see 64/S clients each, as one shard does under a load of 64/S.
  const perShard = ALL_LOADS.find((l) => l.batch === 1 && !l.life && !l.deliver && l.clients * SHARDS === 64);
  const [split, alone] = [cell("edge-dedup", "webhook64"), perShard && cell("one-shard", perShard.name)];
  if (SHARDS > 1 && split?.ops && alone?.ops) {
    const [x, y] = [split.ops.perEvent.rowsWritten, alone.ops.perEvent.rowsWritten];
    console.log(
      `  ${SHARDS} shards under webhook64 have ${64 / SHARDS} clients each, as one shard under ${perShard!.name}: rows written/event ${fmt(x, 2)} vs ${fmt(y, 2)} (${fmt(x / y, 3)}×),` +
        ` requests per micro-batch ${fmt(requestsEach(split), 1)} vs ${fmt(requestsEach(alone), 1)}`,
    );
  }
  // Round by round: each round's ratio compares runs made within seconds of each other, so their spread is this machine's noise.
  const roundRatios: { load: string; vs: TargetName; rounds: number[] }[] = [];
  for (const l of loads) {
    for (const other of ["echo", "echo-do", "echo-sql", "ceiling", "redis", "baseline", "one-shard"] as const) {
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
      [
        "load",
        "target",
        "DO calls/req",
        "SQL/req",
        "R2 puts/req",
        "DO calls/event",
        "SQL/event",
        "R2 puts/event",
        "hottest share",
        "hottest calls/s",
        "DO calls by method",
      ],
      edgeCells.map((c) => [
        c.load,
        c.target,
        fmt(c.ops!.perRequest.doCalls, 2),
        fmt(c.ops!.perRequest.sql, 1),
        fmt(c.ops!.perRequest.r2Puts, 2),
        fmt(c.ops!.perEvent.doCalls, 3),
        fmt(c.ops!.perEvent.sql, 3),
        fmt(c.ops!.perEvent.r2Puts, 3),
        c.ops!.hottest ? fmt(c.ops!.hottest.share, 3) : "n/a",
        c.ops!.hottest ? fmt(c.ops!.hottest.callsPerSec) : "",
        Object.entries(c.ops!.counts.doCalls)
          .map(([k, v]) => `${k} ${fmt(v / c.requests, 2)}`)
          .join(", "),
      ]),
    );
    console.log("  DO calls are counted at the caller (Worker and Coordinator, so the eviction fan-out's PARTITION.advance counts);");
    console.log("  alarm invocations are not. Every R2 put here writes an object (create-only; no batch is replayed).");
    // One object takes a share of the stream's calls: with shards, no single Coordinator should take most of them.
    console.log("  hottest share: of the DO calls to the cell's stream's objects (the stream's name, {stream}/… or {stream}#…), the");
    console.log("  most called object's; calls/s over the cell's timed seconds (its background work included). Which object:");
    for (const c of edgeCells) if (c.ops!.hottest) console.log(`    ${c.load} ${c.target}: ${c.ops!.hottest.object}`);
    const unnamed = edgeCells.filter((c) => (c.ops!.counts.doCallsByObject?.other ?? 0) > 0);
    if (unnamed.length > 0) console.log(`  (${unnamed.map((c) => c.load).join(", ")}: calls to objects past the counters' bound of names counted as "other")`);

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
    console.log("  Left out: CPU time, DO duration and free allowances (see bench/pricing.ts); storage is priced below.");
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

  printLives(cells);
  printStorage(cells, loads);
  const seeds = seedCosts(cells);
  printSeed(seeds);

  // ---- goals
  for (const l of loads) {
    if (l.life || l.deliver) continue; // redis and the ceiling skip the life and delivery loads; their goals are the classic loads'
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
  for (const c of cells.filter((x) => x.target === "edge-dedup" && x.ops && !LIFE_LOADS.has(x.load))) {
    verdict(`${c.load}: cost per million events`, c.ops!.costPerMillionEvents.total, { atMost: c.batch > 1 ? 2.25 : 3.0 }, " USD");
  }
  // The same over a key's whole life, its expiry included (issue #29).
  for (const [l, goal] of Object.entries(LIFE_GOALS)) {
    const c = cell("edge-dedup", l);
    if (!c?.ops) continue;
    verdict(`${l}: SQLite rows written per event over a key's life`, c.ops.perEvent.rowsWritten, { atMost: goal.rowsWritten }, "");
    verdict(`${l}: cost per million events over a key's life`, c.ops.costPerMillionEvents.total, { atMost: goal.usdPerMillion }, " USD");
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
  // Per key at steady state, keys expiring: judged on the life cell with the most keys (the least page rounding).
  for (const t of ["edge-dedup-hashed", "edge-dedup"] as const) {
    const keyCell = cells.filter((c) => c.target === t && c.life?.bytesPerKey != null).sort((a, b) => b.life!.end.rows - a.life!.end.rows)[0];
    if (!keyCell) continue;
    const life = keyCell.life!;
    const text = t === "edge-dedup";
    const goal = KEY_BYTES_GOAL + (text ? Math.round(10 * life.keyTextBytes) / 10 : 0);
    // Too few keys to amortize the pages (a webhook cell's): printed, not judged.
    const robust = life.pageRoundingBytes! <= KEY_BYTES_GOAL / 10;
    const detail =
      `${keyCell.load}, ${fmt(life.end.rows)} keys, ±${fmt(life.pageRoundingBytes!, 1)} B page rounding${robust ? "" : ": too few keys to judge"}` +
      (text ? `; ${KEY_BYTES_GOAL} B + ${fmt(life.keyTextBytes, 1)} B of key text` : "");
    verdict(`${t}: bytes per remembered key, keys expiring`, life.bytesPerKey, { atMost: goal }, " B", detail, robust);
  }
  // Delivery keeps up with ingest (DESIGN §10, issue #30).
  for (const c of cells.filter((x) => x.delivery)) {
    const d = c.delivery!;
    verdict(
      `${c.load}: delivered ÷ ingested rows/s`,
      d.ratio,
      { atLeast: DELIVER_GOALS.ratio },
      "×",
      `${fmt(d.deliveryRatePerSec)} of ${fmt(d.ingestedPerSec)} rows/s; ${fmt(100 * d.shareByEnd)}% arrived by the end of ingest`,
    );
    verdict(
      `${c.load}: backlog drained after the last request`,
      d.drained ? d.drainSeconds : DRAIN_TIMEOUT_MS / 1000,
      { atMost: DELIVER_GOALS.drainSeconds },
      " s",
      d.drained ? undefined : `not drained within ${DRAIN_TIMEOUT_MS / 1000} s: ${fmt(d.arrived)} of ${fmt(d.rowsCommitted)} rows arrived`,
    );
  }
  // Ingest shards: with 4 or more, webhook64's load spreads so that no one object takes more than 0.30 of the stream's calls.
  const wh64 = cell("edge-dedup", "webhook64");
  if (SHARDS >= SHARDED_GOAL.shards && wh64?.ops) {
    const h = wh64.ops.hottest;
    verdict(
      "webhook64: hottest object's share of the stream's DO calls",
      h?.share ?? null,
      { atMost: SHARDED_GOAL.hottestShare },
      "",
      h ? `${h.object}, ${fmt(h.callsPerSec)} calls/s; ${SHARDS} shards` : `${SHARDS} shards`,
    );
  }
  if (SHARDS >= SHARDED_GOAL.shards) {
    for (const l of ["webhook64", "batch500x4"]) {
      const [a, b] = [cell("edge-dedup", l), cell("one-shard", l)];
      verdict(`${l}: ${SHARDS} shards/one events/s`, a && b ? a.eventsPerSec / b.eventsPerSec : null, { atLeast: SHARDED_GOAL.eventsRatio }, "×");
    }
    const [a, b] = [wh64, cell("one-shard", "webhook64")];
    verdict(
      `webhook64: ${SHARDS} shards/one rows written per event`,
      a?.ops && b?.ops ? a.ops.perEvent.rowsWritten / b.ops.perEvent.rowsWritten : null,
      { atMost: SHARDED_GOAL.rowsRatio },
      "×",
      a?.ops && b?.ops ? `${fmt(a.ops.perEvent.rowsWritten, 2)} vs ${fmt(b.ops.perEvent.rowsWritten, 2)}` : undefined,
    );
  }
  for (const s of seeds.filter((x) => x.load === SEED_LOAD)) {
    verdict(`${s.target}: the seed's sizing, USD per day all in`, s.total, { atMost: SEED.goalUsdPerDay }, " USD", `from ${s.load}'s figures`);
  }

  if (rescale) {
    const moved = `${fmt(rescale.keys)} keys in ${fmt(rescale.moveSeconds, 1)} s, ${fmt(rescale.keysPerSec)} keys/s`;
    verdict("rescale8to16: longest ingest pause during the move", rescale.pauseMs, { atMost: RESCALE_GOALS.pauseMs }, " ms", moved);
    verdict(
      "rescale8to16: events/s during the move ÷ before",
      rescale.ratio,
      { atLeast: RESCALE_GOALS.duringRatio },
      "×",
      `${fmt(rescale.during)} of ${fmt(rescale.before)} events/s`,
    );
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
      shards: SHARDS,
      warmSeconds: WARM_MS / 1000,
      duplicateShare: DUPLICATE_SHARE,
      life: {
        delayMs: LIFE_DELAY_MS,
        clockRate: LIFE_CLOCK_RATE,
        repeatWindowMs: LIFE_REPEAT_WINDOW_MS,
        walkStepMs: WALK_STEP_MS,
        walkSteps: WALK_STEPS,
        farAheadMs: FAR_AHEAD_MS,
      },
      ids: RANDOM_IDS ? "random" : "sequential",
      loads: asked,
      targets: targetNames,
      redis: redisVersion,
    },
    cells,
    rescale,
    ratios,
    roundRatios,
    seed: { ...SEED, keys: seedKeys(), costs: seeds },
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

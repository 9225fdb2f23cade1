/**
 * `npm run bench:profile`: where the CPU goes in the real Worker (and its
 * Durable Objects: locally they all run in one workerd isolate) under one of
 * the bench's loads. It starts `wrangler dev` on a snapshot of the code, drives
 * the load (the same rows as bench/run.ts: {id, ts, v}, ~20% repeated ids, a
 * stream with 8 partitions, key ["id"], event time "ts", volatile ts and v),
 * records a V8 CPU profile through wrangler's DevTools inspector (the Chrome
 * DevTools Protocol's Profiler domain) and prints the functions and the source
 * files with the most self time, as shares of the samples taken while busy.
 *
 * It also prints the CPU time the server's processes used per event (from
 * /proc: workerd, which runs the Worker and every Durable Object, and the
 * whole wrangler process group). Unlike events per second, that hardly
 * depends on what else the machine runs, so two versions of the code can be
 * compared on a busy machine: PROFILE_MODE=cpu skips the profiler (whose
 * sampling costs CPU too), PROFILE_SOURCE=dir runs another checkout's code
 * (its src/, wrangler.toml, package.json, tsconfig.json) under the same load.
 *
 *   PROFILE_LOAD=batch500x4   batch500x4 (500-event batches, 4 clients), webhook16 or webhook64 (1 event, 16 or 64 clients)
 *   PROFILE_SHARDS=1          the stream's ingest shards
 *   PROFILE_SECONDS=10        how long the load runs and the profile records (after 2 s of warm-up)
 *   PROFILE_MODE=profile      profile (CPU profile and CPU per event) or cpu (CPU per event only)
 *   PROFILE_SOURCE=dir        the checkout whose code runs (default: this one)
 *   PROFILE_TOP=25            how many functions to print
 *   PROFILE_VARS=K:v,…        vars for the Worker (COMMIT_LOG:off: what the commit log line costs)
 *   BENCH_OUT=dir             also writes profile-<load>.cpuprofile and the bundle there (open it in Chrome DevTools)
 *
 * Safety as in bench/harness.ts: the server runs on 127.0.0.1 in its own
 * process group, is killed at the end, on error and on SIGINT/SIGTERM; the
 * load is bounded by time and count.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { rng } from "../test/support/rng.ts";
import { http, killEverything, PROJECT_FILES, REQUEST_TIMEOUT_MS, startWrangler } from "./harness.ts";

const TOKEN = "bench-token";
const HOUR = 3_600_000;
const LOADS = { batch500x4: { batch: 500, clients: 4 }, webhook16: { batch: 1, clients: 16 }, webhook64: { batch: 1, clients: 64 } } as const;
/** PROFILE_SHARDS=S: the stream's ingest shards (unset: one, the field left out) */
const SHARDS = Number(process.env.PROFILE_SHARDS ?? 1);
const loadName = (process.env.PROFILE_LOAD ?? "batch500x4") as keyof typeof LOADS;
const load = LOADS[loadName];
if (!load) throw new Error(`PROFILE_LOAD: one of ${Object.keys(LOADS).join(", ")}`);
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);
const TOP = Number(process.env.PROFILE_TOP ?? 25);
const MODE = process.env.PROFILE_MODE ?? "profile";
if (MODE !== "profile" && MODE !== "cpu") throw new Error("PROFILE_MODE: profile or cpu");
const SOURCE = process.env.PROFILE_SOURCE;
const MAX_REQUESTS = 100_000;
/** PROFILE_VARS=NAME:value,…: vars for the Worker (e.g. COMMIT_LOG:off), to see what one costs. */
const EXTRA_VARS = Object.fromEntries(
  (process.env.PROFILE_VARS ?? "")
    .split(",")
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf(":")), kv.slice(kv.indexOf(":") + 1)]),
);

/** The bench's rows (bench/run.ts Workload): ids counting up, ~20% repeating one of the last 500. */
function workload(prefix: string) {
  const random = rng(7);
  const base = Date.now() - 2 * HOUR;
  const recent: string[] = [];
  let sent = 0;
  let distinct = 0;
  const next = () => {
    const i = sent++;
    let id: string;
    if (recent.length > 0 && random() < 0.2) id = recent[Math.floor(random() * recent.length)];
    else {
      id = `${prefix}-${i}`;
      if (recent.length < 500) recent.push(id);
      else recent[distinct % 500] = id;
      distinct++;
    }
    return { id, ts: base + i, v: i };
  };
  return (n: number) => (n === 1 ? JSON.stringify(next()) : JSON.stringify(Array.from({ length: n }, next)));
}

function post(agent: Agent, url: URL, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "POST", agent, headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, timeout: REQUEST_TIMEOUT_MS },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** Closed loop: each client sends its next request when the last one answered, until `until()`. */
async function drive(url: string, stream: string, until: () => boolean): Promise<{ requests: number; errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.clients });
  const target = new URL(`${url}/v1/streams/${stream}/events`);
  const body = workload(stream);
  let requests = 0;
  let errors = 0;
  try {
    await Promise.all(
      Array.from({ length: load.clients }, async () => {
        while (!until() && requests < MAX_REQUESTS) {
          const n = requests++;
          const status = await post(agent, target, body(load.batch), {
            authorization: `Bearer ${TOKEN}`,
            "content-type": "application/json",
            "idempotency-key": `${stream}-${n}`,
          }).catch(() => 0);
          if (status !== 200) errors++;
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return { requests, errors };
}

/** A minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
async function inspector(httpUrl: string) {
  const targets = (await (await fetch(`${httpUrl}/json`)).json()) as { webSocketDebuggerUrl: string; title?: string }[];
  if (targets.length === 0) throw new Error("the inspector lists no target");
  // The inspector takes only local origins (miniflare checks Origin); Node's WebSocket (undici) sends none unless given one.
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl, { headers: { origin: "http://127.0.0.1" } } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error("inspector: could not connect")), { once: true });
  });
  let id = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.addEventListener("message", (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const p = msg.id === undefined ? undefined : pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id!);
    if (msg.error) p.reject(new Error(msg.error.message));
    else p.resolve(msg.result);
  });
  const send = <T>(method: string, params: Record<string, unknown> = {}) =>
    new Promise<T>((resolve, reject) => {
      const n = ++id;
      pending.set(n, { resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ id: n, method, params }));
    });
  const scripts: { scriptId: string; url: string }[] = [];
  ws.addEventListener("message", (m) => {
    const msg = JSON.parse(String(m.data)) as { method?: string; params?: { scriptId: string; url: string } };
    if (msg.method === "Debugger.scriptParsed" && msg.params) scripts.push(msg.params);
  });
  return { send, scripts, close: () => ws.close() };
}

/**
 * The bundle's lines by source file: esbuild starts each module of the bundle
 * with a `// src/stream/content.ts` comment, so a line belongs to the last
 * such comment above it. Returns line (0-based) → file, as sorted starts.
 */
export function moduleStarts(source: string): { line: number; file: string }[] {
  const starts: { line: number; file: string }[] = [];
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = /^\/\/ ((?:src|node_modules|\.\.)\/\S+|\S+\.(?:ts|js|mjs))$/.exec(lines[i]);
    if (m) starts.push({ line: i, file: m[1].replace(/^(\.\.\/)+/, "").replace(/^.*node_modules\//, "node_modules/") });
  }
  return starts;
}

/** The file of a bundle line, and the line's place in that module of the bundle (near its line in the source). */
function fileAt(starts: { line: number; file: string }[], line: number): { file: string; line: number } | null {
  let lo = 0,
    hi = starts.length - 1,
    found: { file: string; line: number } | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid].line <= line) {
      found = { file: starts[mid].file, line: line - starts[mid].line };
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; scriptId: string };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function and per file, as shares of the busy samples (idle and the program's own bookkeeping apart). */
export function summarise(
  profile: Profile,
  filesOf: Map<string, { line: number; file: string }[]> = new Map(),
): {
  busy: number;
  idle: number;
  functions: [string, number][];
  files: [string, number][];
  inclusive: [string, number][];
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nameOf = (f: ProfileNode["callFrame"]) => {
    const starts = filesOf.get(f.scriptId);
    const at = starts ? fileAt(starts, f.lineNumber) : null;
    const where = at ? `${at.file}:~${at.line}` : f.url ? `${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}` : "";
    return { name: `${f.functionName || "(anonymous)"} ${where}`.trim(), file: at?.file ?? (f.url ? f.url.replace(/^.*\//, "") : f.functionName) };
  };
  const hits = new Map<number, number>();
  for (const s of profile.samples) hits.set(s, (hits.get(s) ?? 0) + 1);
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  const total = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const [nodeId, n] of hits) {
    const f = byId.get(nodeId)!.callFrame;
    if (f.functionName === "(idle)") {
      idle += n;
      continue;
    }
    busy += n;
    const { name, file: key } = nameOf(f);
    fn.set(name, (fn.get(name) ?? 0) + n);
    file.set(key, (file.get(key) ?? 0) + n);
    // Inclusive: every function on the sample's stack, once.
    const onStack = new Set<string>();
    for (let id: number | undefined = nodeId; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (frame.functionName && filesOf.has(frame.scriptId)) onStack.add(nameOf(frame).name);
    }
    for (const k of onStack) total.set(k, (total.get(k) ?? 0) + n);
  }
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v / Math.max(1, busy)] as [string, number]);
  return { busy, idle, functions: top(fn), files: top(file), inclusive: top(total) };
}

/** CPU seconds (user + system) used so far by the processes of group `pgid`, by command name. */
export function groupCpu(pgid: number): Map<string, number> {
  const tick = 100; // USER_HZ, 100 on Linux
  const byName = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces, so split after its closing parenthesis.
    const close = stat.lastIndexOf(")");
    const name = stat.slice(stat.indexOf("(") + 1, close);
    const f = stat.slice(close + 2).split(" ");
    if (Number(f[2]) !== pgid) continue;
    byName.set(name, (byName.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / tick);
  }
  return byName;
}

const cpuDelta = (before: Map<string, number>, after: Map<string, number>) => new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));

async function main(): Promise<void> {
  const files = SOURCE
    ? Object.fromEntries(["src", "wrangler.toml", "package.json", "tsconfig.json"].map((entry) => [entry, join(SOURCE, entry)]))
    : PROJECT_FILES;
  const server = await startWrangler({
    name: "edge-dedup",
    files,
    vars: { ADMIN_TOKEN: TOKEN, ...EXTRA_VARS },
    ready: async (url) => (await http("GET", `${url}/healthz`)).status === 200,
  });
  try {
    const stream = `prof-${loadName}`;
    for (const name of [stream, `${stream}-warm`]) {
      const put = await http("PUT", `${server.url}/v1/streams/${name}`, {
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({
          key: ["id"],
          eventTime: "ts",
          watermarkDelay: "1 hour",
          partitions: 8,
          volatile: ["ts", "v"],
          ...(SHARDS > 1 ? { shards: SHARDS } : {}),
        }),
      });
      if (put.status !== 200 && put.status !== 201) throw new Error(`PUT stream: HTTP ${put.status} ${put.text.slice(0, 300)}`);
    }
    const warmEnd = Date.now() + 2_000;
    await drive(server.url, `${stream}-warm`, () => Date.now() > warmEnd).catch(() => undefined);
    if (MODE === "cpu") {
      const before = groupCpu(server.pgid!);
      const end = Date.now() + SECONDS * 1000;
      const t0 = performance.now();
      const d = await drive(server.url, stream, () => Date.now() > end);
      const ms = performance.now() - t0;
      printCpu(d, ms, cpuDelta(before, groupCpu(server.pgid!)));
      return;
    }
    const cdp = await inspector(server.inspectorUrl!);
    // The bundle's source, to name each sample's file (scriptParsed events arrive on Debugger.enable).
    await cdp.send("Debugger.enable");
    const filesOf = new Map<string, { line: number; file: string }[]>();
    const sources: Record<string, string> = {};
    for (const script of cdp.scripts) {
      if (!script.url.endsWith(".js")) continue;
      const { scriptSource } = await cdp.send<{ scriptSource: string }>("Debugger.getScriptSource", { scriptId: script.scriptId });
      filesOf.set(script.scriptId, moduleStarts(scriptSource));
      sources[script.scriptId] = scriptSource;
    }
    await cdp.send("Debugger.disable");
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    await cdp.send("Profiler.start");
    const before = groupCpu(server.pgid!);
    const end = Date.now() + SECONDS * 1000;
    const t0 = performance.now();
    const d = await drive(server.url, stream, () => Date.now() > end);
    const ms = performance.now() - t0;
    const { profile } = await cdp.send<{ profile: Profile }>("Profiler.stop");
    const cpu = cpuDelta(before, groupCpu(server.pgid!));
    cdp.close();
    const s = summarise(profile, filesOf);
    printCpu(d, ms, cpu);
    console.log(`samples: ${s.busy} busy, ${s.idle} idle (${((100 * s.busy) / Math.max(1, s.busy + s.idle)).toFixed(0)}% busy)\n`);
    console.log(`self time by file (% of busy samples):`);
    for (const [k, v] of s.files.slice(0, 20)) console.log(`  ${(100 * v).toFixed(1).padStart(5)}%  ${k}`);
    console.log(`\nself time by function (% of busy samples):`);
    for (const [k, v] of s.functions.slice(0, TOP)) console.log(`  ${(100 * v).toFixed(1).padStart(5)}%  ${k}`);
    console.log(`\ntotal time (self and callees) by named function of the bundle (% of busy samples):`);
    for (const [k, v] of s.inclusive.slice(0, TOP)) console.log(`  ${(100 * v).toFixed(1).padStart(5)}%  ${k}`);
    if (process.env.BENCH_OUT) {
      mkdirSync(process.env.BENCH_OUT, { recursive: true });
      const out = join(process.env.BENCH_OUT, `profile-${loadName}.cpuprofile`);
      writeFileSync(out, JSON.stringify(profile));
      // The bundle the profile's line numbers refer to, by script id.
      for (const [id, source] of Object.entries(sources)) writeFileSync(join(process.env.BENCH_OUT, `bundle-${loadName}-${id}.js`), source);
      console.log(`\n  profile: ${out}`);
    }
  } finally {
    await server.stop();
  }
}

function printCpu(d: { requests: number; errors: number }, ms: number, cpu: Map<string, number>): void {
  const perSecond = (d.requests * 1000) / ms;
  const events = d.requests * load.batch;
  const group = [...cpu.values()].reduce((a, b) => a + b, 0);
  const workerd = cpu.get("workerd") ?? 0;
  console.log(
    `\n${loadName}${SOURCE ? ` (code from ${SOURCE})` : ""}: ${d.requests} requests (${d.errors} not 200) in ${(ms / 1000).toFixed(1)} s, ${perSecond.toFixed(1)} req/s, ${(perSecond * load.batch).toFixed(0)} events/s`,
  );
  console.log(
    `CPU per event: workerd ${((workerd * 1e6) / events).toFixed(1)} µs, the whole wrangler group ${((group * 1e6) / events).toFixed(1)} µs (${[...cpu].map(([k, v]) => `${k} ${v.toFixed(2)} s`).join(", ")})`,
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? e.stack : e);
    killEverything();
    process.exit(1);
  },
);

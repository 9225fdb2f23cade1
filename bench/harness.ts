/**
 * What both benches (bench/run.ts, bench/micro.ts) share: child processes and
 * temporary directories that never outlive the bench, `wrangler dev` on a
 * snapshot of the code, HTTP helpers and printing.
 *
 * Safety rules: every child runs in its own process group and is killed (the
 * whole group) when it is stopped, when the bench ends, fails, or gets SIGINT or
 * SIGTERM; every temporary directory is removed at the same moments; servers
 * listen on 127.0.0.1 only.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, groupAlive, killGroup, wranglerEnv } from "../test/support/processes.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 60_000;

// ---------------------------------------------------------------------------
// Child processes and temporary directories: all gone on the way out.

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

/** Last resort, synchronous: on exit, SIGINT, SIGTERM or a fatal error. */
export function killEverything(): void {
  for (const child of children) killGroup(child, "SIGKILL");
  children.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

process.on("exit", killEverything);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    console.error(`\nbench: ${signal}, stopping the servers`);
    killEverything();
    process.exit(130);
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A temporary directory removed when the bench ends (or by `removeTempDir`). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

export interface Server {
  readonly name: string;
  readonly url: string;
  /** wrangler dev's DevTools inspector (bench/profile.ts records CPU profiles through it) */
  readonly inspectorUrl?: string;
  /** the process group's id (the child's pid): bench/profile.ts reads its CPU time */
  readonly pgid?: number;
  log(): string;
  stop(): Promise<void>;
}

/**
 * Spawns `command args` in its own process group, output to `logFile`, and
 * waits until `ready(url)` says the server that answers is ours. `cleanup` runs
 * after the group is gone (on stop or a failed start).
 */
export async function startProcess(opts: {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  url: string;
  ready: (url: string) => Promise<boolean>;
  cleanup?: () => void;
  quiet?: boolean;
}): Promise<Server> {
  const fd = openSync(opts.logFile, "a");
  const child = spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    detached: true, // its own process group: the server and its helpers go together
    stdio: ["ignore", fd, fd],
    env: opts.env,
  });
  closeSync(fd);
  children.add(child);
  let exited: string | null = null;
  child.once("exit", (code, signal) => {
    exited = `${opts.name} exited (code ${code}, signal ${signal})`;
  });
  child.once("error", (e) => {
    exited = `${opts.name} did not start: ${e.message}`;
  });
  const log = () => (existsSync(opts.logFile) ? readFileSync(opts.logFile, "utf8").slice(-3_000) : "(no log)");

  const stop = async (): Promise<void> => {
    if (!children.has(child)) return;
    const pid = child.pid;
    if (pid !== undefined) {
      killGroup(child, "SIGTERM");
      const deadline = Date.now() + STOP_TIMEOUT_MS;
      while (groupAlive(pid) && Date.now() < deadline + 5_000) {
        if (Date.now() > deadline) killGroup(child, "SIGKILL");
        await sleep(50);
      }
    }
    children.delete(child);
    opts.cleanup?.();
  };

  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    if (exited) {
      const [why, tail] = [exited, log()];
      await stop();
      throw new Error(`${opts.name}: ${why} before it answered on ${opts.url}\n--- log ---\n${tail}`);
    }
    if (await opts.ready(opts.url).catch(() => false)) break;
    if (Date.now() - started > READY_TIMEOUT_MS || attempt > 1_000) {
      const tail = log();
      await stop();
      throw new Error(`${opts.name}: did not answer on ${opts.url} within ${READY_TIMEOUT_MS / 1000} s\n--- log ---\n${tail}`);
    }
    await sleep(200);
  }
  if (!opts.quiet) console.log(`  ${opts.name}: ready on ${opts.url} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { name: opts.name, url: opts.url, log, stop, pgid: child.pid };
}

/** What a snapshot of the project needs to run the real Worker under `wrangler dev`. */
export const PROJECT_FILES: Record<string, string> = Object.fromEntries(
  ["src", "wrangler.toml", "package.json", "tsconfig.json"].map((entry) => [entry, join(ROOT, entry)]),
);

/**
 * Starts `wrangler dev` on a snapshot (so someone saving a file in src/ cannot
 * reload the Worker mid-run): `files` maps a path in the snapshot to a path to
 * copy, node_modules is linked. `defines` become `--define K:V`. The local
 * observability collector is off (X_LOCAL_OBSERVABILITY=false): it would add
 * per-operation costs that Cloudflare does not have.
 */
export async function startWrangler(opts: {
  name: string;
  files: Record<string, string>;
  vars?: Record<string, string>;
  defines?: Record<string, string>;
  ready: (url: string) => Promise<boolean>;
}): Promise<Server> {
  const base = tempDir(`edge-dedup-bench-${opts.name}-`);
  const app = join(base, "app");
  for (const [to, from] of Object.entries(opts.files)) cpSync(from, join(app, to), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(app, "node_modules"), "dir");

  const [port, inspectorPort] = [await freePort(), await freePort()];
  const args = [
    WRANGLER,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-ip",
    "127.0.0.1",
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    join(base, "state"),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ];
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push("--var", `${k}:${v}`);
  for (const [k, v] of Object.entries(opts.defines ?? {})) args.push("--define", `${k}:${v}`);
  const server = await startProcess({
    name: opts.name,
    command: process.execPath,
    args,
    cwd: app,
    env: { ...wranglerEnv(base), X_LOCAL_OBSERVABILITY: "false" },
    logFile: join(base, "wrangler.log"),
    url: `http://127.0.0.1:${port}`,
    ready: opts.ready,
    cleanup: () => removeTempDir(base),
  });
  return { ...server, inspectorUrl: `http://127.0.0.1:${inspectorPort}` };
}

export { freePort };

// ---------------------------------------------------------------------------
// HTTP (control calls; the load generator in bench/run.ts has its own client)

export interface Answer {
  status: number;
  text: string;
  ms: number;
}

export async function http(method: string, url: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const t0 = performance.now();
  const res = await fetch(url, { method, body: init.body, headers: init.headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - t0 };
}

export async function httpJson<T>(method: string, url: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<T & { _ms: number }> {
  const a = await http(method, url, init);
  if (a.status !== 200 && a.status !== 201) throw new Error(`${method} ${url}: HTTP ${a.status} ${a.text.slice(0, 400)}`);
  return { ...(JSON.parse(a.text) as T), _ms: a.ms };
}

// ---------------------------------------------------------------------------
// Numbers and printing

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const fmt = (x: number, digits = 0) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "n/a";

export function table(header: string[], rows: (string | number)[][]): void {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r: string[]) => "  " + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("   ");
  console.log(line(cells[0]));
  console.log("  " + widths.map((w) => "-".repeat(w)).join("   "));
  for (const r of cells.slice(1)) console.log(line(r));
}

/**
 * A real `wrangler dev` server for end-to-end tests, on 127.0.0.1 only, with
 * its Durable Object and R2 state persisted in a temporary directory so that
 * it can be stopped (gracefully or by SIGKILL of its whole process tree) and
 * started again on the same state.
 *
 * The Worker is started from a snapshot of the project (src/, wrangler.toml,
 * package.json, tsconfig.json, node_modules linked) taken when the server is
 * created: `wrangler dev` has no switch to turn its file watcher off, and a
 * reload in the middle of a test (someone saving a file in src/) would restart
 * the Worker under it. The snapshot keeps the code fixed for the whole file,
 * across restarts too.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll } from "vitest";
import { freePort, groupAlive, killGroup, wranglerEnv } from "../support/processes";
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createClient,
  parseNdjson,
  type Client as ApiClient,
  type IngestOptions as ClientIngestOptions,
  type Outcome,
  type PartitionState,
  type ProgressReport,
  type PutStreamResult,
  type RawResponse,
  type StreamBody,
  type StreamInfo,
} from "../../src/client/index.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
/** Per attempt; three attempts stay inside the e2e project's 120 s hook timeout. */
const READY_TIMEOUT_MS = 30_000;
const START_ATTEMPTS = 3;
const STOP_TIMEOUT_MS = 10_000;
/** What the Worker's build needs from the project; node_modules is linked. */
const SNAPSHOT = ["src", "wrangler.toml", "package.json", "tsconfig.json"];

class BuildFailed extends Error {}

export type StopSignal = "SIGTERM" | "SIGKILL";

export interface Server {
  /** http://127.0.0.1:<port>, changes on every start */
  readonly url: string;
  /** the V8 inspector's WebSocket (wrangler's proxy), changes on every start */
  readonly inspectorUrl: string;
  readonly token: string;
  /** the --persist-to directory, kept across restarts */
  readonly persistDir: string;
  /** its dev registry (WRANGLER_REGISTRY_PATH): another `wrangler dev` given it reaches this Worker over service bindings */
  readonly registryPath: string;
  /** how many times wrangler has started and answered */
  readonly starts: number;
  /** Stops the server. SIGTERM: graceful; SIGKILL: the whole process group at once, like a crash. */
  stop(signal?: StopSignal): Promise<void>;
  /** Stops (unless stopped) and starts again on the same persisted state. */
  restart(signal?: StopSignal): Promise<void>;
  /** Stops the server and removes its temporary directory. Safe to call twice. */
  dispose(): Promise<void>;
  /** The tail of wrangler's log, for failure messages. */
  log(): string;
}

/** Every live server and temporary directory in this process, cleaned up on exit if a test did not. */
const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of live) killGroup(child, "SIGKILL");
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
}

// eslint-disable-next-line no-control-regex
const stripAnsi = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, "");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ServerOptions {
  token?: string;
  /**
   * Build with the test-only fault switch on (`--define __FAULTS__:true`, src/instrument/faults.ts),
   * so that a request's `X-Test-Fault` header makes it fail at a named crash point.
   */
  faults?: boolean;
}

/** Seals signing secrets in the e2e servers; the same across restarts, as in production. */
export const E2E_CREDENTIALS_KEY = "e2e-credentials-key-0123456789abcdef";

export async function startServer(options: ServerOptions = {}): Promise<Server> {
  installExitHook();
  const token = options.token ?? `e2e-${Math.random().toString(36).slice(2)}`;
  const base = mkdtempSync(join(tmpdir(), "edge-dedup-e2e-"));
  dirs.add(base);
  const app = join(base, "app");
  const persistDir = join(base, "state");
  const logFile = join(base, "wrangler.log");

  // The code under test, frozen for this server's lifetime (taken again only if it did not build).
  function snapshot(): void {
    for (const entry of SNAPSHOT) {
      rmSync(join(app, entry), { recursive: true, force: true });
      cpSync(join(ROOT, entry), join(app, entry), { recursive: true });
    }
  }
  snapshot();
  symlinkSync(join(ROOT, "node_modules"), join(app, "node_modules"), "dir");

  let child: ChildProcess | null = null;
  let url = "";
  let inspectorUrl = "";
  let starts = 0;
  let disposed = false;

  /** Starts wrangler; a failed attempt (port taken meanwhile, slow start) is retried on new ports. */
  async function start(): Promise<void> {
    const errors: string[] = [];
    for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
      try {
        return await startOnce();
      } catch (e) {
        errors.push(`attempt ${attempt}: ${(e as Error).message}`);
        if (e instanceof BuildFailed && starts === 0) {
          // Probably copied while someone was saving several files: take the code again.
          await sleep(2_000);
          snapshot();
        }
      }
    }
    throw new Error(`wrangler dev did not start:\n${errors.join("\n")}\n--- log tail ---\n${tail()}`);
  }

  async function startOnce(): Promise<void> {
    const [port, inspectorPort] = [await freePort(), await freePort()];
    const logStart = existsSync(logFile) ? statSync(logFile).size : 0;
    const fd = openSync(logFile, "a");
    const proc = spawn(
      process.execPath,
      [
        WRANGLER,
        "dev",
        "--port",
        String(port),
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        String(inspectorPort),
        "--inspector-ip",
        "127.0.0.1",
        "--persist-to",
        persistDir,
        "--var",
        `ADMIN_TOKEN:${token}`,
        "--var",
        `CREDENTIALS_KEY:${E2E_CREDENTIALS_KEY}`,
        "--var",
        "ALLOW_LOOPBACK_DESTINATIONS:true", // destinations may POST to the tests' receivers on 127.0.0.1
        "--show-interactive-dev-session=false",
        "--log-level",
        "warn",
        ...(options.faults ? ["--define", "__FAULTS__:true"] : []),
      ],
      {
        cwd: app,
        detached: true, // its own process group: wrangler, its node child and workerd die together
        stdio: ["ignore", fd, fd],
        env: wranglerEnv(base),
      },
    );
    closeSync(fd);
    child = proc;
    live.add(proc);
    let exited: string | null = null;
    proc.once("exit", (code, signal) => {
      exited = `wrangler exited (code ${code}, signal ${signal})`;
      live.delete(proc);
    });

    const candidate = `http://127.0.0.1:${port}`;
    // Only our server knows the token, so only it answers this with a 404 problem naming the path;
    // anything else on the port (another dev server) answers 401, 403, 503 or something unrelated.
    const probe = `/v1/__e2e_ready_${Math.random().toString(36).slice(2)}`;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exited) {
        await stop("SIGKILL");
        throw new Error(`${exited} before it answered on ${candidate}`);
      }
      // wrangler does not exit when the Worker does not build: it waits for the files to change.
      const failure = buildFailure(logStart);
      if (failure) {
        await stop("SIGKILL");
        throw new BuildFailed(`the Worker did not build: ${failure}`);
      }
      let answer = "";
      try {
        const res = await fetch(candidate + probe, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5_000) });
        const text = await res.text();
        if (res.status === 404 && text.includes(probe)) break;
        answer = `HTTP ${res.status}`;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        await stop("SIGKILL");
        throw new Error(`wrangler did not answer as this server on ${candidate} within ${READY_TIMEOUT_MS} ms${answer ? ` (last answer: ${answer})` : ""}`);
      }
      await sleep(150);
    }
    if (exited) {
      await stop("SIGKILL");
      throw new Error(`${exited} right after the probe answered`);
    }
    url = candidate;
    inspectorUrl = `ws://127.0.0.1:${inspectorPort}/ws`;
    starts++;
  }

  async function stop(signal: StopSignal = "SIGTERM"): Promise<void> {
    const proc = child;
    if (!proc || proc.pid === undefined) return;
    child = null;
    url = "";
    inspectorUrl = "";
    const pid = proc.pid;
    killGroup(proc, signal);
    // Wait for every process of the group (not only wrangler) to be gone.
    const deadline = Date.now() + STOP_TIMEOUT_MS;
    while (groupAlive(pid)) {
      if (Date.now() > deadline) {
        killGroup(proc, "SIGKILL");
        if (Date.now() > deadline + 5_000) throw new Error(`process group ${pid} survived SIGKILL`);
      }
      await sleep(50);
    }
    live.delete(proc);
  }

  function buildFailure(from: number): string | null {
    if (!existsSync(logFile)) return null;
    const text = stripAnsi(readFileSync(logFile).subarray(from).toString("utf8"));
    const at = text.indexOf("Build failed");
    return at < 0 ? null : text.slice(at, at + 600);
  }

  function tail(): string {
    if (!existsSync(logFile)) return "(no wrangler log)";
    return stripAnsi(readFileSync(logFile, "utf8")).slice(-4_000);
  }

  try {
    await start();
  } catch (e) {
    rmSync(base, { recursive: true, force: true });
    dirs.delete(base);
    throw e;
  }

  return {
    get inspectorUrl() {
      if (!inspectorUrl) throw new Error("the server is stopped");
      return inspectorUrl;
    },
    get url() {
      if (!url) throw new Error("the server is stopped");
      return url;
    },
    token,
    persistDir,
    registryPath: wranglerEnv(base).WRANGLER_REGISTRY_PATH!,
    get starts() {
      return starts;
    },
    stop,
    async restart(signal: StopSignal = "SIGTERM") {
      await stop(signal);
      await start();
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      try {
        await stop("SIGTERM");
      } finally {
        rmSync(base, { recursive: true, force: true });
        dirs.delete(base);
      }
    },
    log: tail,
  };
}

// ---------------------------------------------------------------------------
// The v1 API (DESIGN §4), through the typed client.

export const HOUR = 3_600_000;
export const MINUTE = 60_000;
/** 2024-01-01 at hh:mm UTC, epoch ms. */
export const at = (hh: number, mm = 0, ss = 0) => Date.UTC(2024, 0, 1, hh, mm, ss);

export type { Outcome, PartitionState, Problem, ProgressReport, RawResponse, SourceInfo, StateEntry, StreamInfo } from "../../src/client/index.ts";

export interface IngestOptions {
  source?: string;
  batchId?: string;
  contentType?: string;
  /** extra request headers */
  headers?: Record<string, string>;
  /** send this exact body instead of JSON.stringify(rows) */
  raw?: string;
  token?: string | null;
}

/**
 * The typed client (src/client) under the names these tests use; reads
 * `server.url` on every call, so it follows restarts.
 */
export class Client {
  private readonly api: ApiClient;

  constructor(server: Pick<Server, "url" | "token">) {
    this.api = createClient({ baseUrl: () => server.url, token: () => server.token, timeoutMs: 60_000 });
  }

  request(method: string, path: string, init: { body?: string; headers?: Record<string, string>; token?: string | null } = {}): Promise<RawResponse> {
    return this.api.request(method, path, init);
  }

  async putStream(name: string, body: unknown): Promise<{ status: number; json: PutStreamResult }> {
    const { status, result } = await this.api.putStream(name, body as StreamBody);
    return { status, json: result };
  }

  stream(name: string): Promise<StreamInfo> {
    return this.api.getStream(name);
  }

  /** POST one batch; returns the raw response (any status). */
  post(name: string, rows: unknown, opts: IngestOptions = {}): Promise<RawResponse> {
    return this.api.postEvents(name, ingestOptions(rows, opts));
  }

  /** POST one batch that must succeed (200); returns its outcome. */
  ingest(name: string, rows: unknown, opts: IngestOptions = {}): Promise<Outcome> {
    return this.api.ingest(name, ingestOptions(rows, opts));
  }

  /** The committed output, raw NDJSON text. */
  async outputText(name: string): Promise<string> {
    return (await this.api.output(name)).text;
  }

  async output<T = Record<string, unknown>>(name: string): Promise<T[]> {
    return (await this.api.output<T>(name)).rows;
  }

  progress(name: string, limit = 1000): Promise<ProgressReport[]> {
    return this.api.progress(name, { limit });
  }

  partitionState(name: string, partition: number): Promise<PartitionState> {
    return this.api.state(name, { partition, limit: 10_000 });
  }

  /** Everything a client can observe of a stream, to compare before and after. */
  async snapshot(name: string) {
    const info = await this.stream(name);
    return {
      config: info.config,
      watermark: info.watermark,
      sources: info.sources,
      rows: info.state.rows,
      committed: info.batches.committed,
      output: await this.outputText(name),
      progress: await this.progress(name),
    };
  }

  /** Every partition's state, in partition order. */
  async allState(name: string, partitions: number): Promise<PartitionState[]> {
    return Promise.all(Array.from({ length: partitions }, (_, p) => this.partitionState(name, p)));
  }
}

function ingestOptions(rows: unknown, opts: IngestOptions): ClientIngestOptions {
  const { raw, ...rest } = opts;
  return raw === undefined ? { ...rest, rows } : { ...rest, body: raw };
}

/**
 * One server for a test file: started before its tests, disposed of after them
 * (even on failure). `server` forwards to it once started; `api` follows it
 * across restarts.
 */
export function useServer(options: Parameters<typeof startServer>[0] = {}): { server: Server; api: Client } {
  let real: Server | undefined;
  const server = new Proxy({} as Server, {
    get(_target, key) {
      if (!real) throw new Error("the server has not started");
      const value = Reflect.get(real, key);
      return typeof value === "function" ? value.bind(real) : value;
    },
  });
  beforeAll(async () => {
    real = await startServer(options);
  });
  afterAll(async () => {
    await real?.dispose();
  });
  return { server, api: new Client(server) };
}

/** Polls `probe` until `done` holds (bounded); returns the last value either way. */
export async function pollUntil<T>(probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v) || Date.now() > deadline) return v;
    await sleep(everyMs);
  }
}

/**
 * Sends a batch until it is answered 200 (a crash answers nothing; a 5xx or a
 * 503 may pass): the same id, the same rows, after any restart under way
 * (`restarting()`), every 100 ms, at most `attempts` times.
 */
export async function sendUntilAnswered(
  api: Client,
  stream: string,
  batchId: string,
  rows: unknown,
  restarting: () => Promise<void> | null,
  attempts = 200,
): Promise<Outcome> {
  for (let attempt = 0; ; attempt++) {
    const pending = restarting();
    if (pending) await pending;
    try {
      return await api.ingest(stream, rows, { batchId });
    } catch (e) {
      if (attempt > attempts) throw e;
      await sleep(100);
    }
  }
}

export { rng } from "../support/rng";

export { parseNdjson };

export { sleep };

/**
 * "The Redis script": what a webhook user would write instead of edge-dedup,
 * as a yardstick for `npm run bench` (bench/run.ts starts it; never deployed).
 *
 * A node:http server answering edge-dedup's ingest call,
 * `POST /v1/streams/{stream}/events` (a JSON array or one JSON object,
 * `Idempotency-Key` header, bearer token), with:
 *   1. replay: if the batch's marker file exists, answer its recorded outcome;
 *   2. dedup: `SET dedup:{stream}:{key} 1 NX PX {delay}` per row, pipelined in
 *      one round trip (a row whose SET answers nil is a duplicate);
 *   3. output: the survivors as one NDJSON file, then the marker file (the
 *      outcome as JSON), both in {dir}/{stream}/.
 * No fsync, no event-time semantics beyond the key's TTL, no crash recovery
 * between the SETs and the files: that is what the script a user writes does.
 *
 * Usage: node --experimental-strip-types bench/redis-script.ts PORT REDIS_PORT DIR TOKEN [DELAY_MS]
 * Standalone on purpose (only node: modules), with a tiny RESP client.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";

// ---------------------------------------------------------------------------
// A tiny RESP2 client: commands are pipelined on one connection, replies are
// matched to them in order.

type Reply = string | number | null | Error | Reply[];

class Redis {
  private readonly socket: Socket;
  private readonly pending: ((r: Reply) => void)[] = [];
  private buf: Buffer = Buffer.alloc(0);

  constructor(port: number) {
    this.socket = connect({ host: "127.0.0.1", port });
    this.socket.setNoDelay(true);
    this.socket.on("data", (chunk: Buffer) => {
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
      for (;;) {
        const parsed = parseReply(this.buf, 0);
        if (parsed === null) break;
        this.buf = this.buf.subarray(parsed.end);
        this.pending.shift()?.(parsed.value);
      }
    });
    this.socket.on("error", (e) => {
      for (const p of this.pending.splice(0)) p(e);
    });
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once("connect", () => resolve());
      this.socket.once("error", reject);
    });
  }

  /** Sends all commands in one write; resolves with their replies in order. */
  pipeline(commands: (string | number)[][]): Promise<Reply[]> {
    if (commands.length === 0) return Promise.resolve([]);
    let out = "";
    for (const c of commands) {
      out += `*${c.length}\r\n`;
      for (const arg of c) {
        const s = String(arg);
        out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
      }
    }
    const replies = commands.map(() => new Promise<Reply>((resolve) => this.pending.push(resolve)));
    this.socket.write(out);
    return Promise.all(replies);
  }
}

function parseReply(buf: Buffer, at: number): { value: Reply; end: number } | null {
  const eol = buf.indexOf("\r\n", at);
  if (eol < 0) return null;
  const line = buf.toString("utf8", at + 1, eol);
  const next = eol + 2;
  switch (String.fromCharCode(buf[at])) {
    case "+":
      return { value: line, end: next };
    case "-":
      return { value: new Error(line), end: next };
    case ":":
      return { value: Number(line), end: next };
    case "$": {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      if (buf.length < next + n + 2) return null;
      return { value: buf.toString("utf8", next, next + n), end: next + n + 2 };
    }
    case "*": {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      const items: Reply[] = [];
      let end = next;
      for (let i = 0; i < n; i++) {
        const item = parseReply(buf, end);
        if (item === null) return null;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default:
      throw new Error(`RESP: unexpected byte ${buf[at]}`);
  }
}

// ---------------------------------------------------------------------------
// The webhook endpoint

const [port, redisPort, dir, token, delayArg] = process.argv.slice(2);
if (!port || !redisPort || !dir || !token) {
  console.error("usage: redis-script.ts PORT REDIS_PORT DIR TOKEN [DELAY_MS]");
  process.exit(2);
}
const DELAY_MS = Number(delayArg ?? 3_600_000);
const KEY_COLUMNS = ["id"];
const MAX_BODY = 10 * 1024 * 1024;
const ROUTE = /^\/v1\/streams\/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\/events$/;

const redis = new Redis(Number(redisPort));
const madeDirs = new Set<string>();

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) reject(new Error("body too large"));
      else chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === "GET" && req.url === "/ping") return void res.end("edge-dedup-redis-script");
  const m = ROUTE.exec(req.url ?? "");
  if (req.method !== "POST" || !m) return send(res, 404, { title: "Not found" });
  if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { title: "Unauthorized" });
  const stream = m[1];
  const batchId = (req.headers["idempotency-key"] as string | undefined) ?? randomUUID();
  if (!/^[\x21-\x7e]{1,255}$/.test(batchId)) return send(res, 400, { title: "bad Idempotency-Key" });

  let parsed: unknown;
  try {
    parsed = JSON.parse(await readBody(req));
  } catch {
    return send(res, 400, { title: "the body is not JSON" });
  }
  const rows = (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];

  const streamDir = join(dir, stream);
  if (!madeDirs.has(streamDir)) {
    await mkdir(streamDir, { recursive: true });
    madeDirs.add(streamDir);
  }
  const file = encodeURIComponent(batchId);
  const marker = join(streamDir, `${file}.marker.json`);
  // 1. Replay: the marker says this batch is done.
  const recorded = await readFile(marker, "utf8").catch(() => null);
  if (recorded !== null) return send(res, 200, { ...JSON.parse(recorded), replayed: true });

  // 2. Dedup: one pipelined SET NX PX per row.
  const rejected: { index: number; error: string }[] = [];
  const commands: (string | number)[][] = [];
  const candidates: Record<string, unknown>[] = [];
  rows.forEach((row, index) => {
    const key = KEY_COLUMNS.map((c) => row?.[c]);
    if (typeof row !== "object" || row === null || key.some((v) => v === undefined || v === null)) {
      rejected.push({ index, error: "missing key" });
      return;
    }
    candidates.push(row);
    commands.push(["SET", `dedup:${stream}:${JSON.stringify(key)}`, "1", "NX", "PX", DELAY_MS]);
  });
  const replies = await redis.pipeline(commands);
  const survivors: Record<string, unknown>[] = [];
  replies.forEach((r, i) => {
    if (r instanceof Error) throw r;
    if (r === "OK") survivors.push(candidates[i]);
  });

  // 3. Output: the data file, then the marker.
  const outcome = {
    batchId,
    source: (req.headers["x-source"] as string | undefined) ?? "default",
    replayed: false,
    input: rows.length,
    emitted: survivors.length,
    duplicates: candidates.length - survivors.length,
    late: 0,
    rejected,
  };
  if (survivors.length > 0) await writeFile(join(streamDir, `${file}.ndjson`), survivors.map((r) => JSON.stringify(r)).join("\n") + "\n");
  await writeFile(marker, JSON.stringify(outcome));
  send(res, 200, outcome);
}

await redis.ready();
const server = createServer((req, res) => {
  handle(req, res).catch((e: unknown) => {
    if (!res.headersSent) send(res, 500, { title: "Internal error", detail: e instanceof Error ? e.message : String(e) });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(port), "127.0.0.1");
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(0));

/** The command line: `edge-dedup send DIR|FILE… --url URL --stream NAME [options]` (`advise` is parsed in advise.ts, `table` in table.ts). */
import { parseArgs } from "node:util";
import { NAME_PATTERN, NAME_RULE } from "../stream/name-rule.ts";
import { DEFAULT_LIMITS, type ChunkLimits } from "./chunk.ts";
import { DEFAULT_RETRY, type RetryPolicy, type Target } from "./sender.ts";

export const USAGE = `Usage: edge-dedup send DIR|FILE... --url URL --stream NAME [options]
       edge-dedup advise FILE... --key COL[,COL...] --time COL [options]
                        (recommends a watermarkDelay from a history of events;
                        edge-dedup advise --help for its options)
       edge-dedup table STREAM --url URL [options]
                        (downloads the stream's Iceberg table for DuckDB;
                        edge-dedup table --help for its options)

Sends every .json, .ndjson and .jsonl file, each optionally gzipped (.gz),
under the given folders (recursively, in name order) to
POST /v1/streams/NAME/events, as NDJSON batches whose ids derive from each
file's path, the batch's position and its bytes. A .json file is read as Spark
reads it: one object per line (as Spark writes part-*.json files), or the whole
file when it is one JSON array or object. Running it again over the same files
sends nothing new: every batch replays, and the summary counts it as replayed,
not as new rows.

Every file not sent is listed with why. Names starting with "_" or "." (Spark's
_SUCCESS, .crc files, _spark_metadata/) are skipped as Spark skips them, below
the folders given. Files that look like data it cannot read (.json.bz2 and other
compressions than gzip, part files of another format) fail the run (exit 1)
once the rest is sent.

When the batches are in, it waits (as a file run does) until the stream's
committed manifest and, with a table, its Iceberg table hold them, and says so.

Options:
  --url URL             the service, e.g. http://127.0.0.1:8787 (required)
  --stream NAME         the stream (required)
  --source NAME         X-Source of every batch (default: the service's "default")
  --token TOKEN         bearer token (default: $EDGE_DEDUP_TOKEN; the variable
                        keeps it out of the process list)
  --batch-rows N        rows per batch at most (default ${DEFAULT_LIMITS.maxRows})
  --max-body-bytes N    bytes per batch at most (default ${DEFAULT_LIMITS.maxBytes})
  --concurrency N       batches in flight at once (default 1: in file order, so
                        event time moves the watermark as the files have it;
                        more can make rows late when the batches in flight
                        span more event time than the watermark delay)
  --max-attempts N      attempts per batch before it is reported failed (default ${DEFAULT_RETRY.maxAttempts})
  --timeout SECONDS     per attempt (default ${DEFAULT_RETRY.timeoutMs / 1000})
  --no-wait             do not wait for the manifest and the table to catch up
  --wait-timeout SECONDS  wait at most this long (default 300)
  --json                print the summary as JSON instead of a table
  --quiet               no progress on stderr
  -h, --help            this text

Exit status: 0 when every batch was committed, 1 when some failed or data was
not read, 2 on a usage error.`;

export interface SendOptions {
  paths: string[];
  target: Target;
  limits: ChunkLimits;
  retry: RetryPolicy;
  concurrency: number;
  json: boolean;
  quiet: boolean;
  /** wait for publication (manifest, table) after sending */
  wait: boolean;
  waitTimeoutMs: number;
}

export type Parsed = { kind: "help" } | { kind: "send"; options: SendOptions } | { kind: "error"; message: string };

function positiveInt(name: string, value: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new Error(`--${name} must be a whole number from 1 to ${max}, not "${value}"`);
  }
  return Number(value);
}

export function parseCli(argv: readonly string[], env: Record<string, string | undefined>): Parsed {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: "string" },
        stream: { type: "string" },
        source: { type: "string" },
        token: { type: "string" },
        "batch-rows": { type: "string" },
        "max-body-bytes": { type: "string" },
        concurrency: { type: "string" },
        "max-attempts": { type: "string" },
        timeout: { type: "string" },
        json: { type: "boolean" },
        "no-wait": { type: "boolean" },
        "wait-timeout": { type: "string" },
        quiet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    return { kind: "error", message: (e as Error).message };
  }
  const { values: v, positionals } = parsed;
  if (v.help || positionals.length === 0 || (positionals[0] === "help" && positionals.length === 1)) return { kind: "help" };
  const [command, ...paths] = positionals;
  if (command !== "send") return { kind: "error", message: `unknown command "${command}"; the commands are "send", "advise" and "table"` };
  try {
    if (paths.length === 0) throw new Error("name at least one folder or file to send");
    if (!v.url) throw new Error("--url is required");
    let url: URL;
    try {
      url = new URL(v.url);
    } catch {
      throw new Error(`--url is not a URL: "${v.url}"`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("--url must be http: or https:");
    if (!v.stream) throw new Error("--stream is required");
    if (v.source !== undefined && !NAME_PATTERN.test(v.source)) throw new Error(`--source must be a source name: ${NAME_RULE}`);
    const token = v.token ?? env.EDGE_DEDUP_TOKEN;
    if (!token) throw new Error("no token: pass --token or set EDGE_DEDUP_TOKEN");
    return {
      kind: "send",
      options: {
        paths,
        target: { url: v.url, stream: v.stream, source: v.source, token },
        limits: {
          maxRows: positiveInt("batch-rows", v["batch-rows"], DEFAULT_LIMITS.maxRows),
          maxBytes: positiveInt("max-body-bytes", v["max-body-bytes"], DEFAULT_LIMITS.maxBytes),
        },
        retry: {
          ...DEFAULT_RETRY,
          maxAttempts: positiveInt("max-attempts", v["max-attempts"], DEFAULT_RETRY.maxAttempts, 100),
          timeoutMs: positiveInt("timeout", v.timeout, DEFAULT_RETRY.timeoutMs / 1000, 3600) * 1000,
        },
        concurrency: positiveInt("concurrency", v.concurrency, 1, 64),
        json: v.json ?? false,
        quiet: v.quiet ?? false,
        wait: !(v["no-wait"] ?? false),
        waitTimeoutMs: positiveInt("wait-timeout", v["wait-timeout"], 300, 3600) * 1000,
      },
    };
  } catch (e) {
    return { kind: "error", message: (e as Error).message };
  }
}

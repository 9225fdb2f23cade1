import { WorkerEntrypoint } from "cloudflare:workers";
import type { Env } from "../env";
import { coordinatorStub } from "../env";
import { HARD_MAX_ROWS } from "../http/body";
import { NAME_PATTERN } from "../stream/name-rule";
import { streamHealth } from "../api/stream-health";
import type { BatchOutcome } from "../stream/batch-outcome";
import { receivedFromRows, submitBatch } from "../ingest/submit";
import { exhaustive, type Refusal, type SubmitResult } from "../ingest/result";
import { acrossRpc, IngestRefused, type RpcRefusal } from "./refusal";

/**
 * Workers RPC for other Workers of the same account, over a service binding
 * (`[[services]] binding = "DEDUP", service = "edge-dedup", entrypoint = "EdgeDedup"`).
 * A service binding is private to the account, so no token: calls act as the
 * admin. ingest() answers the same outcome object as POST …/events; a refusal
 * is thrown as an Error whose message starts with its HTTP status and kind
 * (./refusal.ts). workerd logs every error an RPC method throws as "Uncaught"
 * in this Worker's log, so tryIngest() answers a refusal as a value instead.
 */
export class EdgeDedup extends WorkerEntrypoint<Env> {
  /** One batch: `rows` (an object or an array), its source (default "default") and batch id (generated when left out). */
  async ingest(stream: string, rows: unknown, options: IngestOptions = {}): Promise<BatchOutcome> {
    return crossing(async () => rpcOutcome(await submitRows(this.env, stream, rows, options)));
  }

  /** ingest(), with a refusal answered as `{ok: false, status, kind, detail}` rather than thrown; a failed micro-batch still throws. */
  async tryIngest(stream: string, rows: unknown, options: IngestOptions = {}): Promise<{ ok: true; outcome: BatchOutcome } | RpcRefusal> {
    try {
      return { ok: true, outcome: rpcOutcome(await submitRows(this.env, stream, rows, options)) };
    } catch (e) {
      if (e instanceof IngestRefused) return e.refusal;
      throw e;
    }
  }

  /** GET /v1/streams/{stream}'s body, or null when the stream does not exist. */
  async describe(stream: string) {
    return crossing(async () => {
      checkName(stream);
      const d = await coordinatorStub(this.env, stream).describe();
      return d ? { stream, ...d } : null;
    });
  }

  /** GET /v1/streams/{stream}/health's body, or null when the stream does not exist. */
  async health(stream: string) {
    return crossing(async () => {
      checkName(stream);
      return streamHealth(this.env, stream);
    });
  }
}

export interface IngestOptions {
  source?: string;
  batchId?: string;
}

/** What a method throws, as it must cross the binding (./refusal.ts). */
async function crossing<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw acrossRpc(e);
  }
}

/** Not a method: every method of the class is callable over RPC. */
async function submitRows(env: Env, stream: string, rows: unknown, options: IngestOptions): Promise<SubmitResult> {
  checkName(stream);
  const received = await receivedFromRows(rows, options, { nameOk: (s) => NAME_PATTERN.test(s), maxRows: HARD_MAX_ROWS });
  return "kind" in received ? received : submitBatch(env, stream, received);
}

function checkName(stream: string): void {
  if (typeof stream !== "string" || !NAME_PATTERN.test(stream)) {
    throw new IngestRefused({ ok: false, status: 400, kind: "invalid", detail: `stream name "${String(stream).slice(0, 100)}" is invalid` });
  }
}

/**
 * The RPC adapter's mapper: the outcome, or an IngestRefused error carrying
 * the status and kind an HTTP caller would get ("409 busy: …"); a failed
 * micro-batch throws as any failure does.
 */
export function rpcOutcome(r: SubmitResult): BatchOutcome {
  switch (r.kind) {
    case "committed":
    case "replayed":
      return r.outcome;
    case "invalid":
      throw refused(400, r);
    case "unauthorized":
    case "forbidden":
      throw refused(403, r);
    case "missing":
      throw refused(404, r);
    case "busy":
      throw refused(409, r, r.retryAfterMs);
    case "too-large":
      throw refused(413, r);
    case "conflict":
      throw refused(422, r);
    case "failed":
      throw new Error(r.detail);
    default:
      return exhaustive(r);
  }
}

function refused(status: RpcRefusal["status"], r: Exclude<Refusal, { kind: "failed" }>, retryAfterMs?: number): IngestRefused {
  return new IngestRefused({ ok: false, status, kind: r.kind, detail: r.detail, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
}

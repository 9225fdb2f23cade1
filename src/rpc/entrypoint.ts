import { WorkerEntrypoint } from "cloudflare:workers";
import type { Env } from "../env";
import { coordinatorStub } from "../env";
import { HARD_MAX_ROWS } from "../api/body";
import { NAME_PATTERN } from "../stream/config";
import { streamHealth } from "../api/stream-health";
import type { BatchOutcome } from "../stream/report";
import { receivedFromRows, submitBatch } from "../ingest/submit";
import { exhaustive, type Refusal, type SubmitResult } from "../ingest/result";

/**
 * Workers RPC for other Workers of the same account, over a service binding
 * (`[[services]] binding = "DEDUP", service = "edge-dedup", entrypoint = "EdgeDedup"`).
 * A service binding is private to the account, so no token: calls act as the
 * admin. ingest() answers the same outcome object as POST …/events; a refusal
 * is thrown as an IngestRefused error whose message starts with its HTTP status.
 */
export class EdgeDedup extends WorkerEntrypoint<Env> {
  /** One batch: `rows` (an object or an array), its source (default "default") and batch id (generated when left out). */
  async ingest(stream: string, rows: unknown, options: { source?: string; batchId?: string } = {}): Promise<BatchOutcome> {
    checkName(stream);
    const received = await receivedFromRows(rows, options, { nameOk: (s) => NAME_PATTERN.test(s), maxRows: HARD_MAX_ROWS });
    if ("kind" in received) return rpcOutcome(received);
    return rpcOutcome(await submitBatch(this.env, stream, received));
  }

  /** GET /v1/streams/{stream}'s body, or null when the stream does not exist. */
  async describe(stream: string) {
    checkName(stream);
    const d = await coordinatorStub(this.env, stream).describe();
    return d ? { stream, ...d } : null;
  }

  /** GET /v1/streams/{stream}/health's body, or null when the stream does not exist. */
  async health(stream: string) {
    checkName(stream);
    return streamHealth(this.env, stream);
  }
}

function checkName(stream: string): void {
  if (typeof stream !== "string" || !NAME_PATTERN.test(stream)) throw new Error(`400 invalid: stream name "${stream}" is invalid`);
}

/**
 * The RPC adapter's mapper: the outcome, or an IngestRefused error. RPC keeps
 * an error's message only, so it carries the status and kind an HTTP caller
 * would get ("409 busy: …"); a failed micro-batch throws as any failure does.
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
      throw refused(409, r);
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

function refused(status: number, r: Refusal): Error {
  const e = new Error(`${status} ${r.kind}: ${r.detail}`);
  e.name = "IngestRefused";
  return e;
}

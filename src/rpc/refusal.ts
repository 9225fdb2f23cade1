/**
 * What a Workers RPC caller gets for a refused batch: the HTTP status and kind
 * an HTTP caller would get, and the detail (DESIGN §10; docs/guides/destinations.md).
 *
 * In this isolate a refusal is an IngestRefused error (rpcOutcome throws it).
 * What crosses the service binding is a plain Error instead: workerd keeps an
 * error's own name and fields across RPC only when both ends serialize errors
 * in full (compatibility date 2026-04-21 on); otherwise (wrangler dev's dev
 * registry proxy, a caller on an older date) it folds a custom name into the
 * message ("IngestRefused: 404 …"). A plain Error's message starts with the
 * status everywhere, and its fields travel wherever fields do.
 */
import type { Refusal } from "../ingest/result";

export type RefusalKind = Exclude<Refusal["kind"], "failed">;

/** A refusal as a value: what tryIngest answers, and the fields of the error ingest throws. */
export interface RpcRefusal {
  ok: false;
  status: 400 | 403 | 404 | 409 | 413 | 422;
  kind: RefusalKind;
  detail: string;
  /** busy only: when a retry may pass */
  retryAfterMs?: number;
}

export class IngestRefused extends Error {
  constructor(readonly refusal: RpcRefusal) {
    super(`${refusal.status} ${refusal.kind}: ${refusal.detail}`);
    this.name = "IngestRefused";
  }
}

/** The error that crosses the binding: message `"<status> <kind>: <detail>"`, and the refusal's fields as its own properties. */
export function refusalError(r: RpcRefusal): Error {
  const { ok: _, ...fields } = r;
  return Object.assign(new Error(`${r.status} ${r.kind}: ${r.detail}`), fields);
}

/** An IngestRefused as it must cross RPC; any other error as it is. */
export const acrossRpc = (e: unknown): unknown => (e instanceof IngestRefused ? refusalError(e.refusal) : e);

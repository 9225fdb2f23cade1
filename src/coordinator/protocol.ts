import type { StreamConfig } from "../stream/config";
import type { BatchCounts } from "../stream/batch";
import type { BatchOutcome } from "../stream/report";
import type { BatchObservation } from "../stream/advisor/live";
import type { LaneKeys } from "../output/sink";
import type { SealedSigner } from "./credentials";
import type { ReportedPartition } from "./partitions";
import type { Bookkeeping } from "./window";

/**
 * The Coordinator's protocol: what its RPC methods take and answer. Callers
 * (api/, ingest/, sources/, microbatch/) import these from here, not from the
 * Durable Object's module (src/coordinator/coordinator.ts), which only src/index.ts and
 * the stubs in src/env.ts name.
 */

/** How long a request for a batch id that is in flight waits for it before a 409. */
export const WAIT_FOR_INFLIGHT_MS = 5_000;

/** A batch as received by the Worker: parsed, its caller proven, not yet begun. */
export interface ReceivedBatch {
  sourceHeader: string | null;
  batchId: string;
  auth: IngestAuth;
  rows: unknown[];
  /** the batch's identity: parse mode and body hash (batchIdentity) */
  identity: string;
  bytes: number;
}

/** What the Coordinator's ingest() takes: a received batch (test builds arm crash points with src/instrument/faults.ts's plan, not in the request). */
export type IngestRequest = ReceivedBatch;

export type IngestResult = Exclude<BeginResult, { kind: "run" }> | { kind: "done"; outcome: BatchOutcome };

export type ConfigureResult =
  | { status: "created" | "updated" | "unchanged"; config: StreamConfig }
  | { status: "conflict"; changed: string[]; config: StreamConfig };

/** How an ingest request proved itself; the coordinator holds the credentials. */
export type IngestAuth = { kind: "admin" } | { kind: "token"; hash: string } | { kind: "hmac"; credentialId: string };
/** What the headers claim before the body is read (a signature is checked against the body later); "provider": a webhook's. */
export type CallerClaim = { kind: "admin" } | { kind: "token"; hash: string } | { kind: "hmac" } | { kind: "provider" };
export type { SealedSigner };

export type Admission =
  | { kind: "missing" }
  | { kind: "unauthorized" }
  | { kind: "forbidden"; detail: string }
  | { kind: "admitted"; source: string; limits: StreamConfig["limits"]; signers: SealedSigner[] };

export type BeginResult =
  | { kind: "missing" }
  | { kind: "unauthorized" }
  | { kind: "forbidden"; detail: string }
  | { kind: "conflict" }
  | { kind: "busy"; retryAfterMs: number; source?: string }
  | { kind: "too-large"; detail: string }
  | { kind: "replay"; source: string; outcome: BatchOutcome }
  | { kind: "run"; source: string; watermark: number; begunAt: number; config: StreamConfig; epoch: string };

export interface TouchedPartition extends ReportedPartition {
  inserted: number;
  removed: number;
}

export interface CommitRequest {
  source: string;
  batchId: string;
  maxEventTime: number | null;
  /** the rejected list capped (capRejected) */
  counts: BatchCounts & { rejectedCount?: number };
  /** for the delay advisor's figures; absent (the direct RPC form): the batch adds none */
  seen?: BatchObservation;
  touched: TouchedPartition[];
  objects: LaneKeys;
  startedAt: number;
}

export interface StreamDescription {
  config: StreamConfig;
  epoch: string;
  createdAt: number;
  watermark: number;
  sources: Record<string, { maxEventTime: number | null; watermark: number; lastBatchAt: number | null; declared: boolean; idle: boolean }>;
  state: { rows: number; bytes: number };
  batches: { committed: number };
  /** the Coordinator's own records (DESIGN §9) */
  bookkeeping: Bookkeeping;
}

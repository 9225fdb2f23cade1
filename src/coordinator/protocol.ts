import type { RescaleState } from "../rescale/state";
import type { ShardChange } from "../stream/shard-change";
import type { WatermarkPush } from "../clock/protocol";
import type { StreamConfig } from "../stream/config";
import type { BatchOutcome } from "../stream/batch-outcome";
import type { Lane } from "../output/sink";
import type { ProgressReport } from "../stream/batch-outcome";
import type { StreamMetrics } from "../stream/metrics";
import type { LiveAdvice } from "../stream/advisor/live";
import type { TablePublishing } from "../output/publisher";
import type { CredentialType, StoredCredential } from "../credentials/credential";
import type { Bookkeeping } from "./window";
import type { SourceProgress } from "../stream/watermark";

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

/** A request whose micro-batch failed, or that failed alone: nothing of it was committed, and a retry is safe. */
/** A micro-batch that failed (safe to retry); `retryAfterMs`: a refusal that passes shortly (a shard change under way), answered 503. */
export type FailedRun = { kind: "failed"; message: string; retryAfterMs?: number };

/** A shard asked of a batch id it never began (recall): the asking shard judges it. */
export type NotKnown = { kind: "unknown" };

export type IngestResult = BatchAnswer | { kind: "done"; outcome: BatchOutcome };

export type ConfigureResult =
  | { status: "created" | "updated" | "unchanged"; config: StreamConfig }
  | { status: "conflict"; changed: string[]; config: StreamConfig };

/** How an ingest request proved itself; the coordinator holds the credentials. */
export type IngestAuth = { kind: "admin" } | { kind: "token"; hash: string } | { kind: "hmac"; credentialId: string };
/** What the headers claim before the body is read (a signature is checked against the body later); "provider": a webhook's. */
export type CallerClaim = { kind: "admin" } | { kind: "token"; hash: string } | { kind: "hmac" } | { kind: "provider" };
/** A signing secret as admission hands it to the Worker: still sealed (the Worker opens it with CREDENTIALS_KEY). */
export interface SealedSigner {
  id: string;
  material: string;
  type: CredentialType;
}

export type Admission =
  | { kind: "missing" }
  | { kind: "unauthorized" }
  | { kind: "forbidden"; detail: string }
  /** webhookBytes: a provider webhook's body cap for the source (src/stream/config.ts webhookBodyLimit) */
  | { kind: "admitted"; source: string; limits: StreamConfig["limits"]; signers: SealedSigner[]; webhookBytes: number; shards?: number };

/** A batch sent to a shard that does not judge it (the sender's count of shards is stale): the stream's shards, to route it again (src/ingest/shard-router.ts). */
export type WrongShard = { kind: "moved"; shards: number };

/** What ingest answers a batch it does not run: refused, or answered from the ledger (a replay). */
export type BatchAnswer =
  | { kind: "missing" }
  | { kind: "unauthorized" }
  | { kind: "forbidden"; detail: string }
  | { kind: "conflict" }
  | { kind: "busy"; retryAfterMs: number; source?: string }
  | { kind: "too-large"; detail: string }
  | { kind: "replay"; source: string; outcome: BatchOutcome };

export interface StreamDescription {
  config: StreamConfig;
  epoch: string;
  createdAt: number;
  watermark: number;
  /** the lowest watermark a shard judges by now (DESIGN §12; = watermark with one shard) */
  watermarkApplied: number;
  sources: Record<string, { maxEventTime: number | null; watermark: number; lastBatchAt: number | null; declared: boolean; idle: boolean }>;
  /** unkeyedHashPartitions: partitions that store keys by the unkeyed hash of a release before 27 (absent: none) */
  state: { rows: number; bytes: number; unkeyedHashPartitions?: number; largestPartitionBytes?: number };
  batches: { committed: number };
  /** the Coordinator's own records (DESIGN §9) */
  bookkeeping: Bookkeeping;
  /** per webhook source: redeliveries answered as replays, refused signatures by reason, its committed rows (absent: none counted) */
  webhooks?: Record<string, WebhookCounts>;
  /** the rescale under way (DESIGN §12; absent: none) */
  rescale?: RescaleView;
  /** the last change of the shard count, while cut short or within its window (src/stream/shard-change.ts; absent: none) */
  shardChange?: ShardChange;
}

/** A rescale as GET shows it. */
export interface RescaleView {
  from: number;
  to: number;
  state: "moving";
  keysMoved: number;
  startedAt: number;
  /** old partitions that may still hold keys the new ones lack */
  oldPartitionsLeft: number;
}

/** One shard's own figures, as shard 0 gathers them to answer for the stream (./reads.ts). */
export interface ShardFigures {
  shard: number;
  sources: Record<string, SourceProgress>;
  counters: { name: string; source: string; n: number }[];
  /** commits made (its numbers run from its base with no gaps) */
  committed: number;
  /** the Coordinator's own storage and the batch ids it remembers */
  bytes: number;
  batchesRemembered: number;
  /** the watermark it judges by */
  watermark: number;
  state: { rows: number; bytes: number };
}

export type WebhookCounts = { replayed: number; refused: Record<string, number>; rows: number };

/**
 * What callers may ask a stream's Coordinator (src/coordinator/coordinator.ts
 * implements it); stubs are typed by it (src/env.ts), so no caller imports
 * the Durable Object's module.
 */
/** Where a stream's output is: its name, epoch, incarnation, partitions, last commit, the first commit the ledger's index holds, its config. */
export interface StreamLocation {
  name: string;
  epoch: string;
  incarnation: number;
  partitions: number;
  lastSeq: number;
  indexedFrom: number;
  config: StreamConfig;
  /** which ingest shard answered (each answers for its own commits: src/stream/shards.ts) */
  shard: number;
  /** the partition map's version (partitionStub's), and the rescale under way (null: none) */
  mapVersion: number;
  rescale: RescaleState | null;
  /** the last change of the shard count (null: none; src/stream/shard-change.ts): where batch ids judged before it lie */
  shardChange: ShardChange | null;
}

/** A stream in a list of streams: figures as its partitions last reported them. */
export interface StreamSummary {
  createdAt: number;
  watermark: number;
  state: { rows: number; bytes: number };
  batches: { committed: number };
}

/** How far the committed output is published: the last commit, and the last the manifest and the table (null: none) hold. */
export interface StreamPublication {
  epoch: string;
  committed: number;
  manifest: number;
  table: number | null;
  /** a stream with several shards: the figures above count commits over them; these are each shard's own commit numbers, shard 0 first */
  shards?: { committed: number; manifest: number; table: number | null }[];
}

/** A partition map: its version (partitionStub's) and count. */
export interface MapVersion {
  version: number;
  partitions: number;
}

/** What a shard routes by, as shard 0 holds it: the config (its partition count), the map's version and the rescale under way (null: none). */
export interface ShardMap {
  config: StreamConfig;
  mapVersion: number;
  rescale: RescaleState | null;
}

/** A rescale asked for: started, or refused (400: a bad target; 409: one runs, or the stream can't be rescaled yet). */
export type RescaleAnswer =
  | { kind: "started"; rescale: RescaleState }
  | { kind: "resharded"; from: number; to: number }
  | { kind: "missing" }
  | { kind: "refused"; status: 400 | 409; slug: "rescale-under-way" | "rescale-not-supported" | "same-partitions"; detail: string }
  /** a shard change cut short (a shard did not answer): sent again, it finishes */
  | { kind: "failed"; detail: string };

export interface CoordinatorRpc extends Rpc.DurableObjectBranded {
  // Config
  configure(name: string, config: StreamConfig): Promise<ConfigureResult>;
  /** Shard k > 0 of a stream with several (src/stream/shards.ts), as shard 0 creates, updates and deletes it. */
  /** Shard k > 0 made or updated by shard 0 (and, `change`: a shard-count change's phase, src/coordinator/shard-count.ts). */
  configureShard(
    name: string,
    config: StreamConfig,
    shard: { index: number; epoch: string; incarnation: number },
    change?: ShardChange,
  ): Promise<ConfigureResult>;
  dropShard(): Promise<void>;
  /** An online rescale to `partitions` (DESIGN §12): started (the switch done); or more `shards` (done); or refused with a status and why. */
  rescale(to: number | { shards: number }): Promise<RescaleAnswer>;
  /** Shard 0: its partition map once the switch to `to` (named by a fenced partition) is complete (null: no such stream). */
  switchedMap(epoch: string, to: MapVersion): Promise<ShardMap | null>;
  /** A shard change moved this batch id to the asking shard: this shard's answer if it knows the id, else `unknown` (src/stream/shard-change.ts). */
  recall(req: IngestRequest, deadline: number): Promise<IngestResult | FailedRun | NotKnown>;
  /** Shard k > 0: shard 0's partition map, taken if newer than its own. */
  adoptMap(epoch: string, map: ShardMap): Promise<void>;
  /** The stream's clock tells a shard the global watermark (src/clock). */
  applyWatermark(push: WatermarkPush): Promise<void>;
  describe(): Promise<StreamDescription | null>;
  locate(): StreamLocation | null;
  drop(): Promise<boolean>;
  // Admission and ingest
  admit(sourceHeader: string | null, claim: CallerClaim): Admission;
  knownBatch(source: string, batchId: string): boolean;
  noteWebhooks(source: string, deltas: [string, number][]): void;
  ingest(req: IngestRequest): Promise<IngestResult>;
  ingestMany(reqs: IngestRequest[], deadline?: number): Promise<(IngestResult | FailedRun | WrongShard)[]>;
  flush(): Promise<number>;
  // Reads
  progress(limit: number): Promise<ProgressReport[]>;
  commits(lane: Lane, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[];
  committedSeq(source: string, batchId: string): number | null;
  summary(): Promise<StreamSummary | null>;
  metrics(): Promise<StreamMetrics | null>;
  /** one shard's own figures (shard 0 gathers them for the stream) */
  shardFigures(): ShardFigures | null;
  advice(): Promise<LiveAdvice | null>;
  /** This shard's own advisor figures, as JSON (shard 0's advice() merges every shard's). */
  adviceFigures(): string;
  tablePublishing(): Promise<TablePublishing | null>;
  publication(): Promise<StreamPublication | null>;
  // Credentials (src/coordinator/credentials.ts)
  addCredential(c: StoredCredential): Promise<"added" | "missing" | "duplicate" | "other-provider">;
  resealCredential(id: string, from: string, to: string): void;
  credentials(source: string, withMaterial?: boolean): StoredCredential[];
  deleteCredential(source: string, id: string): Promise<boolean>;
}

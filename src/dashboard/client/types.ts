// The admin API's answers, as far as the page reads them (the Worker's own types are not in this program: it is typed against the DOM).

/** GET /v1/streams */
export interface StreamList {
  streams: { name: string }[];
  next?: string | null;
}

export interface SourceInfo {
  watermark: number;
  maxEventTime: number | null;
  lastBatchAt: number | null;
  declared: boolean;
  idle: boolean;
}

/** GET /v1/streams/{stream} */
export interface StreamInfo {
  config: {
    partitions: number;
    watermarkPolicy: string;
    watermarkDelay: number;
    eventTime?: string | null;
    mode: string;
    key: string[];
  };
  watermark: number;
  state: { rows: number; bytes: number };
  batches: { committed: number };
  bookkeeping?: { bytes: number; batchesRemembered: number; idempotencyWindow: number } | null;
  sources: Record<string, SourceInfo>;
}

/** A webhook source's redeliveries replayed and signatures refused, by reason. */
export interface WebhookTally {
  replayed: number;
  refused: Record<string, number>;
}

/** GET /v1/streams/{stream}/health */
export interface Health {
  status: string;
  reasons: { severity: string; code: string; detail: string }[];
  heldBackBy: string | null;
  watermarkLagMs: number;
  idleSources: string[];
  webhooks?: Record<string, WebhookTally> | null;
}

/** One committed batch, from GET /v1/streams/{stream}/progress */
export interface Progress {
  batchId: string;
  source: string;
  committedAt: number;
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
  conflicts?: number;
  watermarkAfter: number;
  numRowsTotal: number;
  stateBytes: number;
  durationMs: number;
}

/** The delay advisor's figures for one source or the whole stream. */
export interface AdviceFigures {
  rows: number;
  duplicates: number;
  duplicateRate: number;
  gaps: Record<string, number | null>;
  disorder: Record<string, number | null>;
  recommendation: {
    delayMs: number;
    watermarkDelay: string;
    basis: string;
    floor?: { reason: string } | null;
    caveat?: string | null;
  };
  currentDelay: { ms: number; interval: string } | null;
}

/** GET /v1/streams/{stream}/advice */
export interface Advice {
  sources: Record<string, AdviceFigures>;
  overall: AdviceFigures;
  margin: number;
}

/** One destination, from GET /v1/streams/{stream}/destinations */
export interface Destination {
  name: string;
  type: string;
  url?: string;
  binding?: string;
  deliveredSeq: number;
  pending: number;
  lagMs: number;
  failing: boolean;
  paused?: boolean;
  dead: number;
  lastSuccessAt: number | null;
  lastError: string | null;
  lanes: number;
  ordering: "none" | { by: string[] };
  maxPerSecond: number | null;
  laneStatus: LaneStatus[];
}

/** One lane of a destination: how far it has delivered, and what it still has. */
export interface LaneStatus {
  lane: number;
  deliveredSeq: number;
  pending: number;
  lagMs: number;
}

/** One attempt to send a row: when, how long, the status (null: no answer), why it failed (null: delivered). */
export interface Attempt {
  at: number;
  ms: number;
  status: number | null;
  error: string | null;
}

/** One row of GET /v1/streams/{stream}/destinations/{name}/dead */
export interface DeadRow {
  id: string;
  seq: number;
  index: number;
  attempts: number;
  lastError: string | null;
  diedAt: number;
  committedAt: number;
  history: Attempt[];
}

/** One row of GET /v1/streams/{stream}/destinations/{name}/attempts */
export interface RowAttempts {
  id: string;
  seq: number;
  index: number;
  state: "pending" | "dead" | "delivered";
  attempts: Attempt[];
  nextAt?: number;
  at?: number;
}

/** POST /v1/streams/{stream}/destinations/{name}/replay */
export interface Replayed {
  /** the lowest commit sent again (absent: no dead row was left) */
  fromSeq?: number;
  /** several shards sent again: each one's first commit */
  fromSeqs?: number[];
  fromDead: number;
}

/** One partition's state, from GET /v1/streams/{stream}/state?partition=N&limit=1 */
export interface PartitionState {
  partition: number;
  rows: number;
  bytes: number;
}

import type { DestinationConfig } from "./config";
import type { ReadCursor } from "./cursors";
import type { SealedSecret } from "./secrets";

/**
 * The Destination object's SQLite tables. `dest` holds the one destination
 * (config, sealed secrets, the read cursor, counters); `pending` the rows read
 * from the committed output and not yet delivered (at most MAX_PENDING: the
 * state stays bounded however far behind the receiver is); `dead` the rows
 * that ran out of retryFor (the newest MAX_DEAD); `marks` commit times the
 * Coordinator's pokes reported, so that a row's body carries its commit time
 * on every attempt; `members` (only in the stream's index object, named
 * `{stream}`) the names of the stream's destinations. Each table has its
 * module beside this one (./record.ts, ./pending.ts, ./dead-lane.ts,
 * ./marks.ts, ./members.ts; ./tables.ts opens them all).
 */
export const DESTINATION_TABLES = `
  CREATE TABLE IF NOT EXISTS dest (id INTEGER PRIMARY KEY CHECK (id = 1), stream TEXT NOT NULL, name TEXT NOT NULL,
    config TEXT NOT NULL, secrets TEXT NOT NULL, created_at INTEGER NOT NULL, epoch TEXT NOT NULL,
    read_seq INTEGER NOT NULL, read_index INTEGER NOT NULL, paused TEXT, last_error TEXT, last_error_at INTEGER,
    last_success_at INTEGER, delivered INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0, died INTEGER NOT NULL DEFAULT 0);
  CREATE TABLE IF NOT EXISTS pending (seq INTEGER NOT NULL, idx INTEGER NOT NULL, row TEXT NOT NULL, committed_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, first_at INTEGER, next_at INTEGER NOT NULL, last_error TEXT, PRIMARY KEY (seq, idx)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS pending_due ON pending (next_at);
  CREATE TABLE IF NOT EXISTS dead (seq INTEGER NOT NULL, idx INTEGER NOT NULL, row TEXT NOT NULL, committed_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL, last_error TEXT, died_at INTEGER NOT NULL, PRIMARY KEY (seq, idx)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS marks (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS members (name TEXT PRIMARY KEY) WITHOUT ROWID;
`;

/** Migration 2: which incarnation of the stream the destination sends (its webhook-ids carry it from the second on). */
export const DEST_INCARNATION = "ALTER TABLE dest ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 1";

/**
 * Migration 3 (lanes, ordering, attempts): a pending row's entity (null when
 * the destination keeps no order) and lane hash, indexed by entity only where
 * there is one; each pending and dead row's last attempts; the ring of
 * recently delivered rows' attempts (./recent.ts).
 */
export const DEST_LANES = `
  ALTER TABLE pending ADD COLUMN entity TEXT;
  ALTER TABLE pending ADD COLUMN h INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE pending ADD COLUMN tries TEXT;
  ALTER TABLE dead ADD COLUMN tries TEXT;
  CREATE INDEX pending_entity ON pending (entity, seq, idx) WHERE entity IS NOT NULL;
  CREATE TABLE recent (slot INTEGER PRIMARY KEY, seq INTEGER NOT NULL, idx INTEGER NOT NULL, delivered_at INTEGER NOT NULL, tries TEXT NOT NULL);
`;

/** Migration 4 (streams of several shards): shards 1…'s read cursors, as JSON (shard 0's stays in read_seq, read_index). */
export const DEST_SHARD_CURSORS = "ALTER TABLE dest ADD COLUMN shard_cursors TEXT";

/**
 * Rows read ahead of delivery, at most. Ten thousand, so that an ordered
 * destination's failing entity holds back only its own rows until this many
 * are pending (the others keep flowing past it).
 */
export const MAX_PENDING = 10_000;
/** Dead rows kept (the oldest go first beyond this; `died` still counts them). */
export const MAX_DEAD = 10_000;
/** Commit-time marks kept, at most. */
export const MAX_MARKS = 10_000;

export interface DestRow {
  stream: string;
  name: string;
  config: DestinationConfig;
  secrets: SealedSecret[];
  createdAt: number;
  epoch: string;
  /** the stream's incarnation (src/registry/incarnations.ts): part of every webhook-id */
  incarnation: number;
  /** per shard, how far its commits are read (./cursors.ts) */
  cursors: ReadCursor[];
  paused: string | null;
  lastError: string | null;
  lastErrorAt: number | null;
  lastSuccessAt: number | null;
  delivered: number;
  failures: number;
  died: number;
}

export type PendingRow = {
  seq: number;
  idx: number;
  row: string;
  committed_at: number;
  attempts: number;
  first_at: number | null;
  next_at: number;
  last_error: string | null;
  /** the row's entity under the destination's ordering (./ordering.ts), null when unordered */
  entity: string | null;
  /** its lane is h % lanes */
  h: number;
  /** its last attempts (./attempts-log.ts) */
  tries: string | null;
};

/** What the status reports of the pending rows. */
export type PendingSummary = {
  n: number;
  /** the oldest commit time pending */
  oldest: number | null;
  /** 1 when a pending row has failed an attempt */
  failing: number;
};

/** One lane's share of the pending rows (GET's `laneStatus`). */
export type LaneSummary = { lane: number; n: number; oldest: number };

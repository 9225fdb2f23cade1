import type { DedupSettings } from "../stream/dedup";
import type { RowColumns } from "../stream/row-columns";
import type { HandedOut, HandOutPage } from "../stream/handed-out";

/**
 * The Partition's protocol: what its RPC methods take and answer. Callers
 * (the Coordinator, microbatch/) import these from here, not from the Durable
 * Object's module (src/partition/partition.ts).
 */

export interface PartitionStats {
  rows: number;
  bytes: number;
  watermark: number;
  /** the earliest expiry among the remembered keys (null: none expires): eviction visits only partitions due */
  nextExpiry: number | null;
  /** describe() only: the partition stores keys by the unkeyed hash of a release before 27 (src/stream/keyed-key-hash.ts) */
  unkeyedHash?: true;
  /** describe() during a rescale only: of `rows`, those the stream counts at another partition of the move (MoveFigures) */
  elsewhere?: number;
}

/**
 * What describe() is told during a rescale, for the stream's state figure
 * to count each key once: an old partition, the page its move is at (keys
 * up to it are handed out: src/stream/handed-out.ts); a new one, each old
 * partition's cursor and watermark (src/partition/inherited-marks.ts).
 */
export type MoveFigures = { page: HandOutPage | null } | { olds: Record<number, OldHolder> };

/** An old partition as a new one's figures see it: how far its move has got (its cursor) and its watermark. */
export interface OldHolder extends HandedOut {
  watermark: number;
}

/** A micro-batch's rows for this partition: an entry per request, judged in order. */
export interface GroupApplyRequest {
  /** the stream's incarnation: state from an older one (a deleted stream) is dropped */
  epoch: string;
  /** the micro-batch's id: its decisions are one ledger entry under it (absent: one entry per batch, by its key) */
  group?: string;
  watermark: number;
  entries: GroupEntry[];
  /** ledgers of batches that have committed: a retry of them never reaches a partition again */
  forget?: string[];
  /**
   * During a rescale: the keys of these rows that the partitions which owned
   * them before still hold (their peek()), each whole. They are kept here
   * first, unless this partition remembers the key (its copy wins), so the
   * rows are judged against them in the same transaction.
   */
  inherited?: MovedKey[];
  /**
   * The stream has several shards, each calling this partition: the call
   * waits a turn, and the calls that came meanwhile are judged with it in
   * one transaction (src/partition/call-gathering.ts). Absent: judged at once
   * (one shard's calls never overlap, so waiting would gather nothing).
   */
  gather?: true;
}

export interface GroupEntry {
  batch: string;
  settings: DedupSettings;
  rows: RowColumns;
  /** false for a batch's first attempt: it can have no recorded decisions, so none are looked up */
  resumed?: boolean;
}

export type { PartitionRow, RowColumns } from "../stream/row-columns";

export interface GroupApplyResult extends PartitionStats {
  /** per entry, one character per row */
  decisions: string[];
  /**
   * per entry, the kept copy's batch (`{source}\n{batchId}`, null: forgotten)
   * of each conflict, and of each duplicate when the entry keeps duplicates:
   * at: the position in the entry's rows
   */
  kept?: KeptBatch[][];
  /**
   * per entry, |T − T_first| of each duplicate to the copy kept (the delay
   * advisor's gaps), in no particular order; rows without an event time give none
   */
  gaps?: number[][];
  inserted: number;
  removed: number;
  /**
   * set when the partition is fenced (an online rescale replaced its map,
   * src/partition/fence.ts): nothing was judged (no decisions), and this is
   * the map to route by instead
   */
  fenced?: { version: number; partitions: number };
}

export interface StateEntry {
  key: string;
  eventTime: number | null;
  expiresAt: number | null;
}

/** A dropped row's kept copy: its position in the entry's rows and the kept copy's batch. */
export interface KeptBatch {
  at: number;
  batch: string | null;
}

/**
 * The decision ledger's bound: an entry goes with the first call after its
 * micro-batch commits (the Coordinator's forget-list), or, for a micro-batch
 * that never committed (its members crashed and were not retried), after this
 * long: a retry later than that is judged afresh. The Coordinator drops its
 * begin records after as long.
 */
export const LEDGER_RETENTION_MS = 7 * 86_400_000;

/** A remembered key's receipt (lookup): the kept copy's batch, and the copies dropped against it (DESIGN §11). */
export interface StateReceipt extends StateEntry {
  /** `{source}\n{batchId}` of the kept copy (null: kept before receipts were recorded) */
  batch: string | null;
  /** copies dropped against it: duplicates and dropped conflicts */
  dropped: number;
  /** copies whose content differed: dropped or rejected */
  conflicts: number;
}

/**
 * A text partition's next bucket of keys, each whole, in key order (at most
 * `limit` of them: `last` says whether the bucket has none after these);
 * null once none is left; `hashed` from a hashed partition, which can't hand its keys out
 * (they are hashes under its own secret: src/partition/key-moves.ts). An
 * answer, not a throw: a Durable Object's throw is logged as uncaught.
 */
export type HandOut = { bucket: number; keys: MovedKey[]; last: boolean } | { hashed: true } | null;

export type { HandOutPage } from "../stream/handed-out";

/** A partition's ledger entry as a rescale hands it over: [id, recorded at, [[batch key, decisions], …]]. */
export type LedgerEntry = [string, number, [string, string][]];

/**
 * A remembered key whole, as it moves between partitions in a rescale
 * (src/partition/key-moves.ts): everything its receipt and its judging need.
 */
export interface MovedKey {
  /** the state key (its text) */
  key: string;
  expiresAt: number | null;
  /** the kept copy's event time (null: none) */
  eventTime: number | null;
  /** the kept copy's content digest as stored (null: none) */
  digest: string | null;
  /** `{source}\n{batchId}` of the kept copy (null: none recorded) */
  batch: string | null;
  dropped: number;
  conflicts: number;
  /** the stored bucket it had where it was handed out or peeked (the state figures of a move: src/partition/inherited-marks.ts) */
  bucket?: number;
  /** read-through: the old partition that held it, set by the caller */
  from?: number;
}

/**
 * What callers may ask a Partition (src/partition/partition.ts implements
 * it); stubs are typed by it (src/env.ts), so no caller imports the Durable
 * Object's module.
 */
export interface PartitionRpc extends Rpc.DurableObjectBranded {
  /** A micro-batch's rows for this partition, judged in one transaction (decisions recorded for a retry); a fenced partition judges nothing and says so (`fenced`). */
  applyGroup(req: GroupApplyRequest): Promise<GroupApplyResult & { replayed: boolean }>;
  /** An online rescale's fence: from now on this partition judges nothing (src/partition/fence.ts). */
  fence(epoch: string, successors: { version: number; partitions: number }): void;
  /** Raises the partition watermark and evicts: prompt eviction without new rows. */
  advance(epoch: string, watermark: number): PartitionStats & { removed: number };
  /** The partition's figures; during a rescale, `move` asks for `elsewhere` too. Read-only. */
  describe(epoch: string, move?: MoveFigures): PartitionStats;
  /** The remembered keys in key order, `limit` at a time after `after`. */
  list(epoch: string, after: string, limit: number): StateEntry[];
  /** The one remembered key `stateKey`, if it is, with its receipt. */
  lookup(epoch: string, stateKey: string): StateReceipt[];
  /** A text partition's next bucket of keys after `after` (stored bucket; null: the first), each whole; null once none is left. Evicts what expired at `watermark` first. */
  handOut(epoch: string, after: number | null, page?: HandOutPage | null, limit?: number, watermark?: number): HandOut;
  /** These state keys, those remembered, each whole (text or hashed). Read-only. */
  peek(epoch: string, stateKeys: string[]): MovedKey[];
  /** The decisions recorded here for micro-batches not yet committed (a rescale hands them to the new owners). Read-only. */
  handOutDecisions(epoch: string): LedgerEntry[];
  /** Decisions handed over by the old owners: a retry of their batches here replays them. */
  takeDecisions(epoch: string, entries: LedgerEntry[]): void;
  /** A moved bucket (stored form) forgotten by the partition that handed it out, once its keys are kept by their new owners; the keys removed. */
  forgetBucket(epoch: string, bucket: number): PartitionStats & { removed: number };
  /** Keys moved here (a rescale): each not remembered here is kept as it was; ones remembered here keep their own copy. */
  takeIn(epoch: string, settings: DedupSettings, watermark: number, keys: MovedKey[]): PartitionStats & { taken: number };
  /** A rescale's end, at each new partition: the keys read through are forgotten as such; its figures then. */
  endMove(epoch: string): PartitionStats;
  drop(): Promise<void>;
}

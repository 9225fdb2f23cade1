import type { AttemptRecord } from "./attempts-log";
import type { DestinationConfig } from "./config";
import type { DestinationStatus } from "./status";

/**
 * What callers may ask a Destination (src/delivery/destination.ts implements
 * it): one object per destination, and one per stream as the index of its
 * destinations. Stubs are typed by it (src/env.ts).
 */
export type ConfigureResult = { status: "created" | "updated"; secret: string | null };

export interface DeadRow {
  id: string;
  seq: number;
  index: number;
  attempts: number;
  lastError: string | null;
  diedAt: number;
  committedAt: number;
  /** the row as JSON text (RPC types can't carry `unknown`) */
  row: string;
  /** its last attempts (./attempts-log.ts) */
  history: AttemptRecord[];
}

/** A row's attempts (GET …/attempts?id=): where it is now and its last few attempts, newest last. */
export interface RowAttempts {
  id: string;
  seq: number;
  index: number;
  state: "pending" | "dead" | "delivered";
  attempts: AttemptRecord[];
  /** pending: when the next attempt is due */
  nextAt?: number;
  /** dead: when it went to the dead lane; delivered: when it was delivered */
  at?: number;
}

/** GET …/attempts: one row by its place, or the `limit` rows worth a look. */
export type AttemptsQuery = { seq: number; index: number } | { limit: number };

export interface DestinationRpc extends Rpc.DurableObjectBranded {
  // The stream's index
  /** "full": the stream has `max` destinations already, and `name` is not one of them. */
  addMember(name: string, max?: number): "added" | "present" | "full";
  removeMember(name: string): void;
  members(): string[];
  /** Removes every destination of the stream (DELETE of the stream); returns how many. */
  removeMembers(stream: string): Promise<number>;
  /** Pokes every member with the stream's last commit number; returns how many. */
  pokeMembers(stream: string, lastSeq: number, at: number): Promise<number>;
  // One destination
  /** `at.lastSeqs`: each shard's last commit (a new destination starts after them). */
  configure(
    stream: string,
    name: string,
    config: DestinationConfig,
    at: { epoch: string; incarnation: number; lastSeqs: readonly number[] },
  ): Promise<ConfigureResult>;
  status(): DestinationStatus | null;
  rotateSecret(overlapMs?: number): Promise<{ secret: string; id: string } | null>;
  poke(lastSeq: number, at: number): Promise<void>;
  dead(after: { seq: number; index: number }, limit: number): DeadRow[];
  /**
   * A row's attempts by its place ([] when the destination keeps none for it: unknown, or delivered long ago), or the
   * rows with attempts to show (failing pending rows, the newest dead, the newest delivered); null: no such destination.
   */
  attempts(q: AttemptsQuery): RowAttempts[] | null;
  /** From each of these commits on (one per shard named; "dead": each shard's oldest dead row's), every row again. */
  replay(from: readonly number[] | "dead"): Promise<{ fromSeqs: number[]; fromDead: number } | null>;
  remove(): Promise<boolean>;
}

/** One signed POST a lane makes (the Destination signs it and checks the URL first). */
export interface LaneRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

/** What one POST came to: when it started, how long it took, and the status or the error. */
export interface LaneAnswer {
  at: number;
  ms: number;
  status: number | null;
  retryAfter: string | null;
  error: string | null;
}

export interface DeliveryLaneRpc extends Rpc.DurableObjectBranded {
  post(requests: LaneRequest[]): Promise<LaneAnswer[]>;
}

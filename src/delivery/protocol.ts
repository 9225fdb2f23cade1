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
}

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
  configure(stream: string, name: string, config: DestinationConfig, at: { epoch: string; incarnation: number; lastSeq: number }): Promise<ConfigureResult>;
  status(): DestinationStatus | null;
  rotateSecret(overlapMs?: number): Promise<{ secret: string; id: string } | null>;
  poke(lastSeq: number, at: number): Promise<void>;
  dead(after: { seq: number; index: number }, limit: number): DeadRow[];
  replay(fromSeq: number): Promise<{ fromSeq: number; fromDead: number } | null>;
  remove(): Promise<boolean>;
}

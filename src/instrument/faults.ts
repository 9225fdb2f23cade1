/**
 * Test-only fault injection. `__FAULTS__` is a build-time constant: false in
 * wrangler.toml, so `wrangler deploy` bundles none of this (the dead branches
 * are dropped); only the test builds (vitest's define, `wrangler dev --define
 * __FAULTS__:true`) turn it on. A request then names its crash point in the
 * `X-Test-Fault` header, and the Worker arms it in the fault plan below for
 * as long as its call to the Coordinator lasts: no request type carries it.
 */
declare const __FAULTS__: boolean;

export const FAULT_POINTS = [
  "after-decide", // partitions decided, nothing written to R2
  "after-data", // data object written, no marker
  "after-marker", // marker written, coordinator not committed
  "partition-midway", // one partition stored part of its sub-batch, then died
] as const;
/** Crash points inside a partition's storage steps, armed for a partition's epoch (partitionStorageFaultKey), not by a request. */
export const STORAGE_FAULT_POINTS = [
  "partition-seal-midway", // a partition wrote one bucket's segment of a seal, then died
  "partition-evict-midway", // a partition deleted the buckets an eviction passed, then died before counting them
] as const;
/** Crash points between the steps of a shard-count change (src/coordinator/shard-count.ts), armed for a stream (shardChangeFaultKey). */
export const SHARD_CHANGE_FAULT_POINTS = [
  "shards-prepared", // every shard taking batches prepared, nothing else done
  "shards-made", // and the new shards made with the stream's credentials
  "shards-told", // and every other shard on the new count; shard 0 not yet
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number] | (typeof STORAGE_FAULT_POINTS)[number] | (typeof SHARD_CHANGE_FAULT_POINTS)[number];

export class InjectedFault extends Error {
  constructor(readonly point: FaultPoint) {
    super(`injected fault at ${point}`);
  }
}

/** Whether an error is a test's injected fault (one from a Durable Object arrives as a plain Error: RPC keeps the message only). */
export const isInjectedFault = (e: unknown): boolean => e instanceof InjectedFault || (e instanceof Error && /^injected fault at /.test(e.message));

export function faultsEnabled(): boolean {
  return typeof __FAULTS__ !== "undefined" && __FAULTS__;
}

export function requestedFault(headers: Headers): (typeof FAULT_POINTS)[number] | null {
  if (!faultsEnabled()) return null;
  const v = headers.get("x-test-fault");
  return (FAULT_POINTS as readonly string[]).includes(v ?? "") ? (v as (typeof FAULT_POINTS)[number]) : null;
}

/**
 * The test build's fault plan: crash points armed by key, taken (once) where
 * they fire. Module state, like src/instrument/opcount.ts's counters: locally the Worker
 * and all Durable Objects of the script run in one isolate, so what the
 * Worker arms the Coordinator and the Partitions see. Empty when faults are off.
 */
const plan = new Map<string, FaultPoint>();

/** A batch's key in the plan: the Worker knows its stream and batch id, not yet its source. */
export const batchFaultKey = (stream: string, batchId: string): string => `batch\n${stream}\n${batchId}`;
/** A partition call's key: the stream's epoch and the first entry's `{source}\n{batchId}`. */
export const partitionFaultKey = (epoch: string, batch: string): string => `partition\n${epoch}\n${batch}`;

/** A partition's storage step (a seal, an eviction) in any call on this epoch of the stream. */
export const partitionStorageFaultKey = (epoch: string): string => `partition-storage\n${epoch}`;

/** A shard-count change of this stream. */
export const shardChangeFaultKey = (stream: string): string => `shard-change\n${stream}`;

/** Test builds only: the shard-count change armed with `point` dies there (taken once; another point stays armed). */
export function dieInShardChangeIfArmed(stream: string, point: (typeof SHARD_CHANGE_FAULT_POINTS)[number]): void {
  if (!faultsEnabled()) return;
  const armed = takeFault(shardChangeFaultKey(stream));
  if (armed !== null && armed !== point) armFault(shardChangeFaultKey(stream), armed);
  failAt(armed, point);
}

export function armFault(key: string, point: FaultPoint | null): void {
  if (faultsEnabled() && point !== null) plan.set(key, point);
}

/** Runs `fn` with `point` armed under `key`, disarmed after (whether it fired or not). */
export async function withFault<T>(key: string, point: FaultPoint | null, fn: () => Promise<T>): Promise<T> {
  if (!faultsEnabled() || point === null) return fn();
  armFault(key, point);
  try {
    return await fn();
  } finally {
    takeFault(key);
  }
}

/** The point armed under `key`, if any, disarmed. */
export function takeFault(key: string): FaultPoint | null {
  if (!faultsEnabled()) return null;
  const point = plan.get(key) ?? null;
  plan.delete(key);
  return point;
}

export function failAt(requested: FaultPoint | null | undefined, point: FaultPoint): void {
  if (faultsEnabled() && requested === point) throw new InjectedFault(point);
}

/** A batch's key once its Coordinator queued it to run (the request's key is taken then, so only this run fails). */
export const runFaultKey = (stream: string, source: string, batchId: string): string => `run\n${stream}\n${source}\n${batchId}`;

/** The crash point armed for any of a micro-batch's members (each disarmed): the group fails there once. */
export function takeGroupFault(stream: string, members: readonly { source: string; batchId: string }[]): FaultPoint | null {
  if (!faultsEnabled()) return null;
  let point: FaultPoint | null = null;
  for (const m of members) point = takeFault(runFaultKey(stream, m.source, m.batchId)) ?? point;
  return point;
}

/** A group's key in the plan while it writes its objects (src/output/sink.ts fails between its lanes and its marker). */
export const groupFaultKey = (group: string): string => `group\n${group}`;

/** Fails here when the point armed under `key` is `point` (disarming it). */
export function crashPoint(key: string, point: FaultPoint): void {
  if (!faultsEnabled() || plan.get(key) !== point) return;
  plan.delete(key);
  throw new InjectedFault(point);
}

/**
 * The test build's held runs: a batch whose run stops after its begin, its id
 * leased and in flight, until the test lets go (a slow run, without a slow
 * machine). Not a crash point: the run then goes on as it would have.
 */
const holds = new Map<string, { reached: () => void; until: Promise<void> }>();

/** Holds the next run of the batch under `key` (batchFaultKey); `reached` settles once it is held. */
export function holdRun(key: string): { reached: Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (reached = resolve));
  const until = new Promise<void>((resolve) => (release = resolve));
  if (faultsEnabled()) holds.set(key, { reached, until });
  return { reached: held, release };
}

/** Where a run may be held: what to wait for while a test holds any of the batches under `keys` (null: none is held). */
export function heldRun(keys: string[]): Promise<void> | null {
  const held = faultsEnabled() ? keys.flatMap((key) => holds.get(key) ?? []) : [];
  if (held.length === 0) return null;
  for (const key of keys) holds.delete(key);
  for (const hold of held) hold.reached();
  return Promise.all(held.map((hold) => hold.until)).then(() => undefined);
}

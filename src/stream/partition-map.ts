/**
 * Which partition owns a key, as a versioned map (DESIGN §12, online
 * rescale). The key hash never changes (./partition-for.ts: murmur3, seed
 * 42); a map version only says how many partitions it is taken modulo. A
 * rescale from P to N partitions moves each key from partitionFor(key, P) to
 * partitionFor(key, N). Both are the same hash modulo something, so a key of
 * old partition p can only go to a new q with q ≡ p (mod gcd(P, N)): the
 * move is planned per old partition without reading a key (`successors`),
 * and a new partition knows which old ones may still hold its keys
 * (`predecessors`). Pure.
 */
import type { DedupSettings } from "./dedup";
import { partitionFor } from "./partition-for";

export interface PartitionMap {
  /** 1 for the map a stream was created with; each rescale adds one */
  version: number;
  partitions: number;
}

/** The partition that owns `key` (its canonical encoding, ./key.ts) under `map`. */
export const ownerOf = (key: string, map: Pick<PartitionMap, "partitions">): number => partitionFor(key, map.partitions);

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** The new partitions (of `to`) that keys of old partition p (of `from`) may move to, ascending. */
export function successors(p: number, from: number, to: number): number[] {
  const g = gcd(from, to);
  const out: number[] = [];
  for (let q = p % g; q < to; q += g) out.push(q);
  return out;
}

/** The old partitions (of `from`) whose keys new partition q (of `to`) may take, ascending. */
export const predecessors = (q: number, from: number, to: number): number[] => successors(q, to, from);

/**
 * The key a remembered state key was routed by: the state key itself, or,
 * where the event time is part of it (event-time-key: `{key}@{eventTime}`,
 * ./key.ts), the key before it. A moved key's new owner is ownerOf() this.
 */
export function routingKeyOf(stateKey: string, eventTime: number | null, mode: DedupSettings["mode"]): string {
  if (mode !== "event-time-key") return stateKey;
  const suffix = `@${eventTime}`;
  if (!stateKey.endsWith(suffix)) throw new Error(`state key ${JSON.stringify(stateKey)} does not end with its event time ${suffix}`);
  return stateKey.slice(0, -suffix.length);
}

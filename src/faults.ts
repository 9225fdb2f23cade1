/**
 * Test-only fault injection. `__FAULTS__` is a build-time constant: false in
 * wrangler.toml, so `wrangler deploy` bundles none of this (the dead branches
 * are dropped); only the test builds (vitest's define, `wrangler dev --define
 * __FAULTS__:true`) turn it on. A request then names its crash point in the
 * `X-Test-Fault` header.
 */
declare const __FAULTS__: boolean;

export const FAULT_POINTS = [
  "after-decide", // partitions decided, nothing written to R2
  "after-data", // data object written, no marker
  "after-marker", // marker written, coordinator not committed
  "partition-midway", // one partition stored part of its sub-batch, then died
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export class InjectedFault extends Error {
  constructor(readonly point: FaultPoint) {
    super(`injected fault at ${point}`);
  }
}

export function faultsEnabled(): boolean {
  return typeof __FAULTS__ !== "undefined" && __FAULTS__;
}

export function requestedFault(headers: Headers): FaultPoint | null {
  if (!faultsEnabled()) return null;
  const v = headers.get("x-test-fault");
  return (FAULT_POINTS as readonly string[]).includes(v ?? "") ? (v as FaultPoint) : null;
}

export function failAt(requested: FaultPoint | null | undefined, point: FaultPoint): void {
  if (faultsEnabled() && requested === point) throw new InjectedFault(point);
}

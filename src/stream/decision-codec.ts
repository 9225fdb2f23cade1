import type { Decision } from "./dedup";

/**
 * A partition's record of one batch's decisions, kept so that a retry of a
 * batch that crashed before its commit is judged the same way. Stored compactly
 * (it is most of a partition's storage at high volume): entries in ascending
 * input index, each the gap from the previous index in decimal followed by the
 * decision letter — indices 0, 3, 4 decided e, d, e encode as "0e3d1e".
 */
export function encodeDecisions(decisions: ReadonlyMap<number, Decision>): string {
  let out = "";
  let previous = 0;
  for (const index of [...decisions.keys()].sort((a, b) => a - b)) {
    out += `${index - previous}${decisions.get(index)}`;
    previous = index;
  }
  return out;
}

export function decodeDecisions(encoded: string): Map<number, Decision> {
  const out = new Map<number, Decision>();
  let index = 0;
  for (const [, gap, decision] of encoded.matchAll(/(\d+)([edlcx])/g)) {
    index += Number(gap);
    out.set(index, decision as Decision);
  }
  return out;
}

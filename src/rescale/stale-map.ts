/**
 * A micro-batch routed by a partition map that a rescale has replaced: a
 * partition it called is fenced (src/partition/fence.ts) and named the map in
 * force. The Coordinator that ran it takes the new map and runs the
 * micro-batch again, resumed, so the decisions the old partitions made (which
 * went to their successors) stand.
 */
export class StaleMap extends Error {
  constructor(readonly to: { version: number; partitions: number }) {
    super(`the partition map was replaced by version ${to.version} (${to.partitions} partitions)`);
  }
}

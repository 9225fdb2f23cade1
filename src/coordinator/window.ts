/**
 * The idempotency window (DESIGN §9), pure: when the Coordinator may forget a
 * committed micro-batch's batch ids, and what the bookkeeping figures are.
 *
 * A forgotten id's retry is judged afresh, and must add no output:
 * - `global`: every key it emitted or met is remembered forever: duplicates.
 * - `event-time-key`: a key (key + T) is forgotten only once wm >= T, and then
 *   the row is late (T <= wm), in every partition (partition wm >= batch wm).
 * - `within-watermark`: a duplicate may have T > T_first + delay (a later copy
 *   does not extend the expiry), so once its key is evicted it would be neither
 *   late nor a duplicate. So a group is also kept until the global watermark
 *   has passed every event time in it: its rows are then all late.
 * Rows rejected for being too far ahead of the clock or the watermark are the
 * exception: judged afresh, they are judged as under a new batch id.
 */
import type { Mode } from "../stream/config";

/** What the Coordinator keeps to decide a group's prune: its last commit number, when it committed, its max event time. */
export interface RememberedGroup {
  seq: number;
  committedAt: number;
  /** the largest event time of the group's accepted rows (an upper bound for groups migrated from the old layout); null: none */
  maxEventTime: number | null;
}

export interface PruneContext {
  now: number;
  window: number;
  mode: Mode;
  /** the global watermark in force */
  watermark: number;
  /** commits not yet in the committed manifest (and the table, when configured) are kept: publication reads them */
  publishedUpTo: number;
}

/** Whether a committed group's batch ids may be forgotten now. */
export function forgettable(g: RememberedGroup, ctx: PruneContext): boolean {
  if (g.committedAt + ctx.window > ctx.now) return false;
  if (g.seq > ctx.publishedUpTo) return false;
  if (ctx.mode === "within-watermark" && g.maxEventTime !== null && g.maxEventTime > ctx.watermark) return false;
  return true;
}

/**
 * The bound on the committed records a prune step looks at: the alarm forgets
 * in steps of this many groups (each step is one transaction), so a backlog
 * (a window shortened, a watermark that stood still and moved) drains over
 * several alarms instead of one long one.
 */
export const PRUNE_STEP_GROUPS = 500;

/**
 * One prune step over the oldest groups (oldest first, at most PRUNE_STEP_GROUPS):
 * the groups are forgotten oldest first, up to the first that must stay, so the
 * ids remembered are always a contiguous run of commit numbers. `upTo`: the last
 * commit number to forget (null: none); `retryAt`: when the next step is due
 * by the clock (null: it waits for the watermark or publication, whose own
 * alarms come back here, or there is nothing left).
 */
export function pruneStep(groups: readonly RememberedGroup[], ctx: PruneContext, limit = PRUNE_STEP_GROUPS): { upTo: number | null; retryAt: number | null } {
  let upTo: number | null = null;
  for (const g of groups) {
    if (!forgettable(g, ctx)) {
      const byClock = g.committedAt + ctx.window;
      return { upTo, retryAt: byClock > ctx.now ? byClock : null };
    }
    upTo = g.seq;
  }
  return { upTo, retryAt: groups.length >= limit ? ctx.now : null };
}

/** GET /v1/streams/{stream}'s `bookkeeping`: the Coordinator's own storage, and the ids it remembers. */
export interface Bookkeeping {
  /** the Coordinator's SQLite storage, bytes */
  bytes: number;
  /** committed batch ids remembered (within the window, or kept until the watermark passes them) */
  batchesRemembered: number;
  /** ms */
  idempotencyWindow: number;
}

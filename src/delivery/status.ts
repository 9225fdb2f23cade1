import { formatCursor } from "../stream/shard-cursor";
import { deliveredSeq } from "./attempt";
import { cursorOf } from "./cursors";
import { signingSecrets } from "./secrets";
import type { Ordering } from "./ordering";
import type { DestRow, LaneSummary, PendingSummary } from "./store";

/** One lane as GET shows it. */
export interface LaneStatus {
  lane: number;
  deliveredSeq: number;
  /** a stream of several shards: deliveredSeq per shard, comma-separated (deliveredSeq is shard 0's) */
  deliveredCursor?: string;
  pending: number;
  lagMs: number;
}

/** What GET …/destinations/{name} answers (src/delivery/schemas.ts publishes its shape). Pure. */
export interface DestinationStatus {
  stream: string;
  name: string;
  type: "http" | "queue";
  url?: string;
  binding?: string;
  timeoutMs?: number;
  retryForMs: number;
  createdAt: number;
  deliveredSeq: number;
  /** a stream of several shards: deliveredSeq per shard, comma-separated, as X-Commit-Seq and replay's `after` take it (deliveredSeq is shard 0's) */
  deliveredCursor?: string;
  pending: number;
  failing: boolean;
  paused: boolean;
  lastError: string | null;
  lastErrorAt: number | null;
  lastSuccessAt: number | null;
  lagMs: number;
  delivered: number;
  failures: number;
  dead: number;
  lanes: number;
  ordering: Ordering;
  maxPerSecond: number | null;
  /** each lane's progress: every lane, those without pending rows caught up */
  laneStatus: LaneStatus[];
  secrets: { id: string; createdAt: number; expiresAt: number | null }[];
}

/**
 * The status of destination `d`, from its pending rows (all of them, per
 * lane, and the lowest seq per lane and shard), the first unread commit's
 * time, and its dead lane's size, at `now`.
 */
export function destinationStatus(
  d: DestRow,
  p: PendingSummary,
  byLane: LaneSummary[],
  lows: readonly { lane: number; k: number; low: number }[],
  unreadAt: number | null,
  dead: number,
  now: number,
): DestinationStatus {
  const oldest = p.oldest ?? unreadAt;
  const lag = (at: number | null) => (at === null ? 0 : Math.max(0, now - at));
  const busy = new Map(byLane.map((l) => [l.lane, l]));
  const shards = d.cursors.length;
  // Per shard, every row up to it delivered (or dead): of all lanes, or of one.
  const delivered = (lane: number | null) =>
    Array.from({ length: shards }, (_, k) => {
      const mine = lows.filter((l) => l.k === k && (lane === null || l.lane === lane)).map((l) => l.low);
      return deliveredSeq(mine.length > 0 ? Math.min(...mine) : null, cursorOf(d.cursors, k).seq);
    });
  const figures = (lane: number | null) => {
    const all = delivered(lane);
    return { deliveredSeq: all[0], ...(shards > 1 ? { deliveredCursor: formatCursor(all) } : {}) };
  };
  const laneStatus = Array.from({ length: d.config.lanes }, (_, lane) => {
    const l = busy.get(lane);
    // A lane without pending rows has sent all it was given; rows not read yet are every lane's lag.
    return l ? { lane, ...figures(lane), pending: l.n, lagMs: lag(l.oldest) } : { lane, ...figures(lane), pending: 0, lagMs: lag(unreadAt) };
  });
  return {
    stream: d.stream,
    name: d.name,
    type: d.config.type,
    ...(d.config.type === "http" ? { url: d.config.url, timeoutMs: d.config.timeoutMs } : { binding: d.config.binding }),
    retryForMs: d.config.retryForMs,
    createdAt: d.createdAt,
    ...figures(null),
    pending: p.n,
    failing: d.paused !== null || p.failing === 1,
    paused: d.paused !== null,
    lastError: d.paused ?? d.lastError,
    lastErrorAt: d.lastErrorAt,
    lastSuccessAt: d.lastSuccessAt,
    lagMs: lag(oldest),
    delivered: d.delivered,
    failures: d.failures,
    dead,
    lanes: d.config.lanes,
    ordering: d.config.ordering,
    maxPerSecond: d.config.maxPerSecond,
    laneStatus,
    secrets: signingSecrets(d.secrets, now).map(({ id, createdAt, expiresAt }) => ({ id, createdAt, expiresAt })),
  };
}

import { deliveredSeq } from "./attempt";
import { signingSecrets } from "./secrets";
import type { DestRow, PendingSummary } from "./store";

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
  secrets: { id: string; createdAt: number; expiresAt: number | null }[];
}

/** The status of destination `d`, from its pending rows, the first unread commit's time, and its dead lane's size, at `now`. */
export function destinationStatus(d: DestRow, p: PendingSummary, unreadAt: number | null, dead: number, now: number): DestinationStatus {
  const oldest = p.oldest ?? unreadAt;
  return {
    stream: d.stream,
    name: d.name,
    type: d.config.type,
    ...(d.config.type === "http" ? { url: d.config.url, timeoutMs: d.config.timeoutMs } : { binding: d.config.binding }),
    retryForMs: d.config.retryForMs,
    createdAt: d.createdAt,
    deliveredSeq: deliveredSeq(p.low, d.readSeq),
    pending: p.n,
    failing: d.paused !== null || p.failing === 1,
    paused: d.paused !== null,
    lastError: d.paused ?? d.lastError,
    lastErrorAt: d.lastErrorAt,
    lastSuccessAt: d.lastSuccessAt,
    lagMs: oldest === null ? 0 : Math.max(0, now - oldest),
    delivered: d.delivered,
    failures: d.failures,
    dead,
    secrets: signingSecrets(d.secrets, now).map(({ id, createdAt, expiresAt }) => ({ id, createdAt, expiresAt })),
  };
}

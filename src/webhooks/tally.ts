/**
 * What a stream's webhook sources absorbed and refused (issue 27): each
 * provider redelivery answered from the ledger (a replay), and each delivery
 * whose signature was refused, by reason. Counted in the Worker's isolate and
 * handed to the stream's Coordinator at most once per FLUSH_MS per source, so
 * that an unsigned caller can't make the service write once per request it
 * sends; only for a source this isolate admitted (it exists and has a
 * provider credential), so that made-up names count nothing. Pure.
 */

/** Why a delivery's signature was refused. */
export const REFUSAL_REASONS = ["malformed", "stale", "wrong-provider", "bad-signature"] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** The /metrics counter names (src/stream/metrics.ts reads them back). */
export const REPLAYED_COUNTER = "webhook:replayed";
export const refusedCounter = (reason: RefusalReason) => `webhook:refused:${reason}`;
const COUNTERS = new Set<string>([REPLAYED_COUNTER, ...REFUSAL_REASONS.map(refusedCounter)]);
export const isWebhookCounter = (name: string) => COUNTERS.has(name);

/** A source's counts at most this often reach its Coordinator (one state-record write each). */
export const FLUSH_MS = 5_000;

export type WebhookEvent = "replayed" | RefusalReason;

interface Pending {
  counts: Map<string, number>;
  /** when counts last went to the Coordinator (-Infinity: never) */
  flushedAt: number;
  /** a later flush is already waited for */
  scheduled: boolean;
}

/**
 * The counts of one isolate, by stream and source. `note` says what to do:
 * hand the counts over now (`flush`: they are taken), or after `in` ms (the
 * caller waits, then calls `take`), or nothing (a flush is already due).
 */
export class WebhookTally {
  private pending = new Map<string, Pending>();

  constructor(private readonly maxKeys = 10_000) {}

  note(stream: string, source: string, event: WebhookEvent, now: number): { flush: [string, number][] } | { in: number } | null {
    const key = `${stream}\n${source}`;
    let p = this.pending.get(key);
    if (!p) {
      if (this.pending.size >= this.maxKeys) this.pending.clear(); // a bound on memory, not a policy: counts are best-effort until handed over
      this.pending.set(key, (p = { counts: new Map(), flushedAt: -Infinity, scheduled: false }));
    }
    const name = event === "replayed" ? REPLAYED_COUNTER : refusedCounter(event);
    p.counts.set(name, (p.counts.get(name) ?? 0) + 1);
    if (now - p.flushedAt >= FLUSH_MS) return { flush: this.take(stream, source, now) };
    if (p.scheduled) return null;
    p.scheduled = true;
    return { in: p.flushedAt + FLUSH_MS - now };
  }

  /** The counts noted for the source since the last take, now handed over. */
  take(stream: string, source: string, now: number): [string, number][] {
    const p = this.pending.get(`${stream}\n${source}`);
    if (!p) return [];
    const out = [...p.counts];
    p.counts.clear();
    p.flushedAt = now;
    p.scheduled = false;
    return out;
  }
}

import type { StreamConfig } from "../stream/config";
import { nextIdleAt, type SourceProgress } from "../stream/watermark";
import { FLUSH_AFTER_MS, FLUSH_BYTES } from "../output/outbox";

/** Eviction fan-out runs at most this often after the watermark moves. */
export const EVICTION_DELAY_MS = 200;
/** Commits are published (manifest, table) by an alarm about this long after them. */
export const PUBLISH_AFTER_MS = 2_000;
/** Prune steps due by the clock run at most this often (each is an alarm). */
export const PRUNE_MIN_INTERVAL_MS = 1_000;

/**
 * The Coordinator's one alarm, shared by its jobs: the outbox flush, the
 * eviction fan-out, publication, sources turning idle and the ledger's prune
 * steps. Each asks for the alarm by a time; an earlier pending alarm stays
 * (pushing it later on every commit would starve eviction under steady
 * load), a later one is brought forward. The alarm handler
 * (Coordinator.alarm) does every job that is due and asks again.
 */
export class Alarms {
  /**
   * The pending alarm as last read or set (null: none; undefined: not known).
   * Only this object sets it, so a commit that needs no earlier alarm returns
   * without a storage call: nothing to wait for between a micro-batch's
   * commit and the next one's start (what arrives in between begins alone,
   * with a state row of its own).
   */
  private known: number | null | undefined;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** Makes sure the alarm fires by `at`. */
  async by(at: number): Promise<void> {
    if (this.known != null && this.known <= at) return;
    const current = this.known === undefined ? await this.storage.getAlarm() : this.known;
    if (current === null || current > at) {
      this.known = undefined; // until the set has held
      await this.storage.setAlarm(at);
      this.known = at;
    } else {
      this.known = current;
    }
  }

  /** The alarm fired (the handler runs): none is pending until one is asked for. */
  fired(): void {
    this.known = null;
  }

  /** The outbox's next flush: now when it is full, else when its oldest entry is due. */
  async flush(pending: { bytes: number; oldest: number | null }): Promise<void> {
    if (pending.oldest === null) return;
    await this.by(pending.bytes >= FLUSH_BYTES ? Date.now() : pending.oldest + FLUSH_AFTER_MS);
  }

  /** The outbox flush is due (the alarm handler asks). */
  static flushDue(pending: { bytes: number; oldest: number | null }, now: number): boolean {
    return pending.oldest !== null && (pending.bytes >= FLUSH_BYTES || now - pending.oldest >= FLUSH_AFTER_MS);
  }

  /** The eviction fan-out after the watermark moved (a global stream evicts nothing). */
  async eviction(config: StreamConfig): Promise<void> {
    if (config.mode !== "global") await this.by(Date.now() + EVICTION_DELAY_MS);
  }

  /** Publication (manifest, table) of what was committed now. */
  async publish(): Promise<void> {
    await this.by(Date.now() + PUBLISH_AFTER_MS);
  }

  /** When the next source turns idle (the watermark may move then without a commit). */
  async idle(config: StreamConfig, sources: Record<string, SourceProgress>): Promise<void> {
    const at = nextIdleAt(config, sources, Date.now());
    if (at !== null) await this.by(at);
  }

  /** The ledger's next prune step due by the clock (null: none; at most every PRUNE_MIN_INTERVAL_MS). */
  async prune(at: number | null): Promise<void> {
    if (at !== null) await this.by(Math.max(at, Date.now() + PRUNE_MIN_INTERVAL_MS));
  }

  async cancel(): Promise<void> {
    this.known = undefined;
    await this.storage.deleteAlarm();
    this.known = null;
  }
}

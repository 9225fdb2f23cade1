import { coordinatorStub, type Env } from "../env";
import { SqliteObject } from "../storage/sqlite-object";
import type { StreamConfig } from "../stream/config";
import { shardsOf } from "../stream/shards";
import { ClockState } from "./clock-state";
import { CLOCK_MIGRATIONS, ClockStore } from "./clock-store";
import { clockInterval, type ClockAnswer, type ClockReading, type ClockReport, type ClockRpc, type ShardNow } from "./protocol";

/** The clock's figures are stored at most this often (and at once when it learns of a source): one lost costs a watermark a little behind, never ahead. */
const STORE_EVERY_MS = 1_000;

/**
 * One per stream with several ingest shards (DESIGN §12): each shard reports
 * its sources' progress at most every clockInterval (100 ms) and gets back the one
 * global watermark (./clock-state.ts); shards that have not asked lately are
 * told it. Off every batch's critical path but a source's first commit in a
 * shard.
 */
export class Clock extends SqliteObject<Env> implements ClockRpc {
  private state: ClockState | null | undefined;
  private storedAt = 0;
  private storeTimer: ReturnType<typeof setTimeout> | null = null;
  private pushTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly rows: ClockStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: CLOCK_MIGRATIONS, countAs: "Clock", countCalls: true });
    this.rows = new ClockStore(this.sql);
  }

  async exchange(report: ClockReport): Promise<ClockAnswer> {
    const state = this.current(report.stream, report, report.shards);
    if (!state) return { kind: "stale" };
    const { answer, grew } = state.exchange(report, Date.now());
    if (answer.kind === "ok") {
      this.store(grew);
      this.schedulePush();
    }
    return answer;
  }

  configure(stream: string, at: { epoch: string; incarnation: number }, configVersion: number, config: StreamConfig): void {
    this.current(stream, at, shardsOf(config))?.configure(configVersion, config);
    this.store(true);
  }

  read(epoch: string, fresh: ShardNow[] = []): ClockReading | null {
    const s = this.loaded();
    if (!s || s.data.epoch !== epoch) return null;
    s.observe(fresh);
    this.schedulePush();
    return s.reading(Date.now());
  }

  drop(): void {
    for (const t of [this.storeTimer, this.pushTimer]) if (t) clearTimeout(t);
    this.storeTimer = this.pushTimer = null;
    this.state = null;
    this.rows.clear();
  }

  /** The clock of this stream incarnation: a newer one (the stream was deleted and created again) starts afresh; an older one gets null. */
  private current(stream: string, at: { epoch: string; incarnation: number }, shards: number): ClockState | null {
    const s = this.loaded();
    if (s && s.data.epoch === at.epoch) return s;
    if (s && at.incarnation < (s.data.incarnation ?? 0)) return null;
    this.state = ClockState.fresh(stream, at, shards, clockInterval(shards));
    this.store(true);
    return this.state;
  }

  private loaded(): ClockState | null {
    if (this.state !== undefined) return this.state;
    const data = this.rows.load();
    this.state = data ? new ClockState(data, clockInterval(data.shards)) : null;
    return this.state;
  }

  /** Stores the figures now (`now`) or within STORE_EVERY_MS. */
  private store(now: boolean): void {
    const write = () => {
      this.storeTimer = null;
      if (!this.state) return;
      this.rows.save(this.state.data);
      this.storedAt = Date.now();
    };
    if (now || Date.now() - this.storedAt >= STORE_EVERY_MS) {
      if (this.storeTimer) clearTimeout(this.storeTimer);
      write();
    } else {
      this.storeTimer ??= setTimeout(write, STORE_EVERY_MS);
    }
  }

  /** Shards behind the watermark that have not asked for an interval are told it, an interval from now. */
  private schedulePush(): void {
    if (this.pushTimer || !this.state) return;
    this.pushTimer = setTimeout(() => void this.push(), this.state.lagMs);
  }

  private async push(): Promise<void> {
    this.pushTimer = null;
    const s = this.state;
    if (!s) return;
    const now = Date.now();
    const watermark = s.advance(now);
    const lagging = s.lagging(now);
    const told = await Promise.all(
      lagging.map((k) =>
        coordinatorStub(this.env, s.data.stream, k)
          .applyWatermark({ epoch: s.data.epoch, watermark })
          .then(
            () => true,
            () => false,
          ),
      ),
    );
    if (this.state !== s) return; // dropped or started afresh meanwhile
    lagging.forEach((k, i) => told[i] && s.told(k, watermark));
    if (told.some((ok) => !ok) || s.advance(Date.now()) > watermark) this.schedulePush();
  }
}

import { clockStub, type Env } from "../env";
import { clockInterval, type ClockAnswer, type ClockReport } from "../clock/protocol";
import { pendingSources } from "../stream/shard-watermark";
import { isSharded, shardsOf } from "../stream/shards";
import type { Meta } from "./meta";
import type { CoordinatorStores } from "./stores";

/**
 * A shard of a stream with several (DESIGN §12) and its stream's clock: after
 * commits, at most every clockInterval (100 ms) and once more after the last, it
 * reports its sources' progress and takes the global watermark back (never
 * awaited by a batch); before it commits a source the clock does not know
 * yet, it reports it and waits, so that the clock never judges without a
 * source that may have spoken. A stream with one shard never calls.
 */
export class ClockLink {
  /** the sources the clock knows of (its last answer) */
  private known = new Set<string>();
  private lastAt = 0;
  private running: Promise<void> | null = null;
  private trailing: ReturnType<typeof setTimeout> | null = null;
  /** commits since the last report */
  private dirty = false;

  constructor(
    private readonly s: CoordinatorStores,
    private readonly env: Env,
    /** the watermark moved from `before` to `after` (eviction may be due) */
    private readonly moved: (meta: Meta, before: number, after: number) => Promise<void>,
  ) {}

  /** Before a commit: sources it holds that the clock does not know are reported first (with their planned max event time). */
  async beforeCommit(meta: Meta, members: readonly { source: string; maxEventTime: number | null }[]): Promise<void> {
    if (!isSharded(meta.config)) return;
    const committed = this.s.sourceProgress();
    const pending = pendingSources(members, (source) => this.known.has(source) || Object.hasOwn(committed, source));
    if (Object.keys(pending).length > 0) await this.report(meta, pending);
  }

  /** After a commit: reported now if the last report is an interval old, else once the interval ends. */
  afterCommit(meta: Meta): void {
    if (!isSharded(meta.config)) return;
    this.dirty = true;
    this.soon(meta);
  }

  /** Reports now (an alarm's idle check, a read): the clock may move the watermark without a commit. */
  async refresh(meta: Meta): Promise<void> {
    if (isSharded(meta.config)) await this.report(meta, {});
  }

  /** The clock told this shard the watermark (it had not asked lately). */
  async told(meta: Meta, watermark: number): Promise<void> {
    await this.apply(meta, watermark);
  }

  forget(): void {
    if (this.trailing) clearTimeout(this.trailing);
    this.trailing = null;
    this.known.clear();
    this.dirty = false;
  }

  private soon(meta: Meta): void {
    if (this.running || this.trailing) return;
    const wait = this.lastAt + clockInterval(shardsOf(meta.config)) - Date.now();
    if (wait <= 0) {
      void this.report(meta, {}).catch(() => undefined);
      return;
    }
    this.trailing = setTimeout(() => {
      this.trailing = null;
      const now = this.s.meta();
      if (now && now.epoch === meta.epoch && this.dirty) void this.report(now, {}).catch(() => undefined);
    }, wait);
  }

  private async report(meta: Meta, pending: Record<string, number | null>): Promise<void> {
    while (this.running) await this.running.catch(() => undefined);
    const run = this.send(meta, pending);
    this.running = run;
    try {
      await run;
    } finally {
      if (this.running === run) this.running = null;
    }
    // Commits while it ran are reported in their turn.
    if (this.dirty) this.soon(this.s.meta() ?? meta);
  }

  private async send(meta: Meta, pending: Record<string, number | null>): Promise<void> {
    this.dirty = false;
    this.lastAt = Date.now();
    const clock = clockStub(this.env, meta.name);
    const report: ClockReport = {
      stream: meta.name,
      epoch: meta.epoch,
      incarnation: meta.incarnation,
      shard: meta.shard,
      shards: shardsOf(meta.config),
      configVersion: meta.configVersion,
      sources: this.s.sourceProgress(),
      pending,
      applied: meta.watermark,
    };
    let answer: ClockAnswer;
    try {
      answer = await clock.exchange(report);
      if (answer.kind === "config") answer = await clock.exchange({ ...report, config: meta.config });
      if (answer.kind === "stale") throw new Error(`stream ${meta.name} was created again: this shard is a leftover of an older one`);
      if (answer.kind !== "ok") throw new Error("the stream's clock did not take its config");
    } catch (e) {
      this.dirty = true; // reported again at the next interval
      throw e;
    }
    this.known = new Set(answer.known);
    await this.apply(meta, answer.watermark);
  }

  private async apply(meta: Meta, watermark: number): Promise<void> {
    const before = this.s.meta();
    if (!before || before.epoch !== meta.epoch || watermark <= before.watermark) return;
    this.s.clockWatermark = watermark;
    await this.moved(before, before.watermark, watermark);
  }
}

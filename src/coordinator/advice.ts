import type { BatchCounts } from "../stream/batch";
import {
  emptyFigures,
  figuresFromJson,
  figuresToJson,
  observeBatch,
  type BatchObservation,
  type LiveFigures,
  type LiveFiguresJson,
} from "../stream/advisor/live";

/**
 * The delay advisor's live figures per source (the figures themselves are
 * src/stream/advisor/live.ts), part of the Coordinator's state record
 * (src/coordinator/state.ts). Read once and kept: only this object's commits
 * change them. A commit adds to the kept figures (observe) and its record
 * carries them (stored()); one that rolls back must forget() them, so that
 * they are read again as storage has them. (Copying them per commit instead
 * cost ~250 µs with a thousand buckets.)
 */
export class AdviceFigures {
  private cached: Map<string, LiveFigures> | undefined;

  constructor(
    /** the figures as the newest state record holds them */
    private readonly read: () => [string, LiveFiguresJson][],
    /** called when they change (the next record must carry them anew) */
    private readonly touched: () => void = () => undefined,
  ) {}

  all(): Map<string, LiveFigures> {
    this.cached ??= new Map(this.read().map(([source, f]) => [source, figuresFromJson(f)]));
    return this.cached;
  }

  /** Adds a committing batch to its source's figures, noted in `changed`. */
  observe(changed: Map<string, LiveFigures>, b: { source: string; counts: BatchCounts; seen: BatchObservation }, maxBefore: number | null): void {
    const all = this.all();
    let f = all.get(b.source);
    if (!f) all.set(b.source, (f = emptyFigures()));
    changed.set(b.source, f);
    this.touched();
    observeBatch(f, { rows: b.counts.emitted + b.counts.duplicates + b.counts.late, duplicates: b.counts.duplicates }, b.seen, maxBefore);
  }

  /** Every source's figures as a state record keeps them. */
  stored(): [string, LiveFiguresJson][] {
    return [...this.all()].map(([source, f]) => [source, figuresToJson(f)]);
  }

  /** The stream was dropped, or a commit rolled back: read afresh next time. */
  forget(): void {
    this.cached = undefined;
  }
}

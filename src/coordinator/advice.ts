import type { BatchCounts } from "../stream/batch";
import { emptyFigures, figuresFromJson, figuresToJson, observeBatch, type BatchObservation, type LiveFigures } from "../stream/advisor/live";

/**
 * The delay advisor's live figures per source (the `advice` table; the
 * figures themselves are src/stream/advisor/live.ts). Read once and kept:
 * only this object's commits change them. A commit adds to the kept figures
 * (observe) and writes them in its transaction (save); one that rolls back
 * must forget() them, so that they are read again as storage has them.
 * (Copying them per commit instead cost ~250 µs with a thousand buckets.)
 */
export class AdviceFigures {
  private cached: Map<string, LiveFigures> | undefined;

  constructor(private readonly sql: SqlStorage) {}

  all(): Map<string, LiveFigures> {
    this.cached ??= new Map(
      this.sql.exec<{ source: string; figures: string }>("SELECT source, figures FROM advice").toArray().map((r) => [r.source, figuresFromJson(JSON.parse(r.figures))]),
    );
    return this.cached;
  }

  /** Adds a committing batch to its source's figures, noted in `changed`; a batch without `seen` (the direct RPC form) adds none. */
  observe(changed: Map<string, LiveFigures>, b: { source: string; counts: BatchCounts; seen?: BatchObservation }, maxBefore: number | null): void {
    if (!b.seen) return;
    const all = this.all();
    let f = all.get(b.source);
    if (!f) all.set(b.source, (f = emptyFigures()));
    changed.set(b.source, f);
    observeBatch(f, { rows: b.counts.emitted + b.counts.duplicates + b.counts.late, duplicates: b.counts.duplicates }, b.seen, maxBefore);
  }

  /** Writes the changed figures (inside the commit's transaction): one statement for all sources. */
  save(changed: Map<string, LiveFigures>): void {
    if (changed.size === 0) return;
    this.sql.exec(
      "INSERT OR REPLACE INTO advice (source, figures) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)",
      JSON.stringify([...changed].map(([name, f]) => [name, JSON.stringify(figuresToJson(f))])),
    );
  }

  /** The stream was dropped, or a commit rolled back: read afresh next time. */
  forget(): void {
    this.cached = undefined;
  }
}

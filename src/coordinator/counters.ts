import type { Migration } from "../storage/migrations";

/** A counter of /metrics: name (e.g. "rows:emitted"), source ("" for none), value. */
export type Counter = { name: string; source: string; n: number };

/**
 * Coordinator migration 6: the counters of /metrics in one row (JSON
 * [[name, source, n], …]) instead of a row per counter, and the partitions'
 * figures in one row (JSON [[p, rows, bytes, watermark, next expiry], …],
 * src/coordinator/partitions.ts) instead of a row per partition, so that a
 * commit writes one row for each instead of five or more apiece (what SQLite
 * bills is rows written, whatever their size).
 */
export const COUNTERS_MIGRATION: Migration = {
  version: 8,
  does: "the /metrics counters in one row (counters) instead of a row each (metrics); the partitions' figures likewise (partition_figures)",
  up: (sql) => {
    sql.exec("CREATE TABLE IF NOT EXISTS partition_figures (id INTEGER PRIMARY KEY CHECK (id = 1), f TEXT NOT NULL)");
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'partitions'").toArray().length > 0) {
      sql.exec(
        `INSERT OR REPLACE INTO partition_figures (id, f)
         SELECT 1, coalesce(json_group_array(json_array(p, rows, bytes, watermark, next_expiry)), '[]') FROM (SELECT * FROM partitions ORDER BY p)`,
      );
      sql.exec("DROP TABLE partitions");
    }
    sql.exec("CREATE TABLE IF NOT EXISTS counters (id INTEGER PRIMARY KEY CHECK (id = 1), c TEXT NOT NULL)");
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'metrics'").toArray().length === 0) return;
    sql.exec("INSERT OR REPLACE INTO counters (id, c) SELECT 1, coalesce(json_group_array(json_array(name, source, n)), '[]') FROM metrics");
    sql.exec("DROP TABLE metrics");
  },
};

/**
 * The /metrics counters, part of the Coordinator's state record
 * (src/coordinator/state.ts; before migration 9 the `counters` row of
 * COUNTERS_MIGRATION), kept in memory after the first read: add() changes
 * them, the commit's record carries them; forget() after a transaction that
 * rolled back (read again).
 */
export class MetricCounters {
  private cached: Map<string, Counter> | undefined;

  constructor(
    /** the counters as the newest state record holds them */
    private readonly read: () => [string, string, number][],
    /** called when they change (the next record must carry them anew) */
    private readonly touched: () => void = () => undefined,
  ) {}

  all(): Counter[] {
    return [...this.load().values()];
  }

  /** Adds [name, source, delta] triples (in memory: the commit's state record writes them). */
  add(deltas: readonly [string, string, number][]): void {
    if (deltas.length === 0) return;
    const m = this.load();
    this.touched();
    for (const [name, source, n] of deltas) {
      const k = `${name}\n${source}`;
      const c = m.get(k);
      if (c) c.n += n;
      else m.set(k, { name, source, n });
    }
  }

  forget(): void {
    this.cached = undefined;
  }

  private load(): Map<string, Counter> {
    if (this.cached) return this.cached;
    const list = this.read();
    this.cached = new Map(list.map(([name, source, n]) => [`${name}\n${source}`, { name, source, n }]));
    return this.cached;
  }
}

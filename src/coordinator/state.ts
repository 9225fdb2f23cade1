import type { LiveFiguresJson } from "../stream/advisor/live";
import type { SourceProgress } from "../stream/watermark";
import { AdviceFigures } from "./advice";
import { MetricCounters, type Counter } from "./counters";
import { PartitionBook } from "./partitions";

/**
 * What a commit changes besides the ledger, in one record (Coordinator
 * migration 9): the watermark commits moved, each source's progress, the
 * delay advisor's figures, the partitions' last figures, the /metrics
 * counters, and the micro-batch that has begun and not yet committed (what
 * its retry after a restart is judged by). SQLite bills rows written, not
 * bytes, so this is one row however much changed.
 *
 * Where it is written: a micro-batch that goes into the outbox carries the
 * record in its outbox row (written anyway); anything else (a micro-batch
 * that wrote its own objects, a begin with no commit to ride on, an eviction
 * fan-out, a flush dropping the outbox rows that held the latest record)
 * writes the `state` row. The newest record (largest `v`) is the state.
 */
export interface StoredState {
  /** version: every record written takes the next */
  v: number;
  /** the watermark commits set (meta's, moved by configure and idle sources, is the other bound: the larger holds) */
  watermark: number;
  sources: [name: string, maxT: number | null, lastBatchAt: number | null][];
  advice: [source: string, figures: LiveFiguresJson][];
  partitions: [p: number, rows: number, bytes: number, watermark: number, nextExpiry: number | null][];
  counters: [name: string, source: string, n: number][];
  /** the micro-batch begun after the commit that wrote this record (null: none) */
  begun: BegunGroup | null;
}

/** A micro-batch that has begun: its members with what they are judged by (src/coordinator/ledger.ts's begin record, inline). */
export interface BegunGroup {
  id: string;
  at: number;
  /** [source, batchId, identity, watermark, begunAt, configVersion] */
  members: [string, string, string, number, number, number][];
}

export const STATE_TABLE = "CREATE TABLE IF NOT EXISTS state (id INTEGER PRIMARY KEY CHECK (id = 1), v INTEGER NOT NULL, s TEXT NOT NULL);";

export const emptyState = (): StoredState => ({ v: 0, watermark: 0, sources: [], advice: [], partitions: [], counters: [], begun: null });

export const sourcesOf = (s: StoredState): Record<string, SourceProgress> =>
  Object.fromEntries(s.sources.map(([name, maxEventTime, lastBatchAt]) => [name, { maxEventTime, lastBatchAt }]));

export const sourcesToStored = (sources: Record<string, SourceProgress>): StoredState["sources"] =>
  Object.entries(sources).map(([name, p]) => [name, p.maxEventTime, p.lastBatchAt]);

export const countersToStored = (counters: readonly Counter[]): StoredState["counters"] => counters.map((c) => [c.name, c.source, c.n]);

/** The fields whose lists a record may share with the one before it (a micro-batch's begin carries the last commit's unchanged). */
const FIGURE_LISTS: ReadonlySet<string> = new Set<keyof StoredState>(["advice", "partitions", "counters"]);
/** The JSON of each figures list a record carried (the lists are never changed once in a record: a change makes new ones). */
const figuresJson = new WeakMap<object, string>();
const jsonOf = (list: object) => figuresJson.get(list) ?? figuresJson.set(list, JSON.stringify(list)).get(list)!;

/**
 * A record as stored: JSON.stringify's text, field by field, with the
 * figure lists' JSON made once however many records carry them unchanged
 * (making it again at each begin was ~1.5% of a webhook's CPU).
 */
export function stateJson(s: StoredState): string {
  const fields = Object.entries(s).filter(([, v]) => v !== undefined);
  return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${FIGURE_LISTS.has(k) ? jsonOf(v) : JSON.stringify(v)}`).join(",")}}`;
}

/**
 * The state row and the newest record among the outbox rows (outbox.ts
 * hands them over as `candidates`): reads, picks the newest, writes. The
 * in-memory parts (advice, partitions, counters) are kept by their rooms;
 * the Coordinator assembles a record from them when it writes one.
 */
export class StateRow {
  constructor(private readonly sql: SqlStorage) {}

  /** The newest record: the state row's or one of `candidates` (version and JSON), whichever has the larger `v`. */
  read(candidates: readonly { v: number; s: string }[]): StoredState {
    const row = this.sql.exec<{ v: number; s: string }>("SELECT v, s FROM state").toArray()[0];
    let best = row;
    for (const c of candidates) if (!best || c.v > best.v) best = c;
    return best ? { ...emptyState(), ...(JSON.parse(best.s) as StoredState), v: best.v } : emptyState();
  }

  /** Writes a record as the state row (one row written). */
  write(s: StoredState): void {
    this.sql.exec("INSERT OR REPLACE INTO state (id, v, s) VALUES (1, ?, ?)", s.v, stateJson(s));
  }
}

/**
 * Coordinator migration 9's part here: the watermark commits set, the
 * sources, the advisor's figures, the /metrics counters and the partitions'
 * figures (tables `sources` and `advice`, rows `counters` and
 * `partition_figures`) become the first state record; the old tables go.
 */
export function foldState(sql: SqlStorage): void {
  sql.exec(STATE_TABLE);
  const meta = sql.exec<{ watermark: number }>("SELECT watermark FROM meta").toArray()[0];
  // Guarded, as migrations are: a table storage never had (or a state row it has already) is left as it is.
  const has = (table: string) => sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length > 0;
  const written = sql.exec("SELECT 1 FROM state").toArray().length > 0;
  if (meta && !written) {
    const one = <T>(table: string, column: string): T[] =>
      has(table)
        ? sql
            .exec<{ j: string }>(`SELECT ${column} AS j FROM ${table}`)
            .toArray()
            .flatMap((r) => JSON.parse(r.j) as T[])
        : [];
    const record: StoredState = {
      v: 1,
      watermark: meta.watermark,
      sources: has("sources")
        ? sql
            .exec<{ name: string; max_t: number | null; last_batch_at: number | null }>("SELECT name, max_t, last_batch_at FROM sources ORDER BY name")
            .toArray()
            .map((r) => [r.name, r.max_t, r.last_batch_at])
        : [],
      advice: has("advice")
        ? sql
            .exec<{ source: string; figures: string }>("SELECT source, figures FROM advice ORDER BY source")
            .toArray()
            .map((r) => [r.source, JSON.parse(r.figures)])
        : [],
      partitions: one("partition_figures", "f"),
      counters: one("counters", "c"),
      begun: null,
    };
    new StateRow(sql).write(record);
  }
  sql.exec("DROP TABLE IF EXISTS sources; DROP TABLE IF EXISTS advice; DROP TABLE IF EXISTS counters; DROP TABLE IF EXISTS partition_figures;");
}

/** What a new state record changes (absent: as the current one has it). */
export interface StateChanges {
  watermark?: number;
  sources?: Record<string, SourceProgress>;
  begun?: BegunGroup | null;
}

/**
 * The Coordinator's state, kept: the newest record (read once, from the
 * state row or an outbox row), the rooms whose figures it carries (advice,
 * partitions, counters: changed in memory by a commit, written by its
 * record), and the records written next. The first read in an object's life
 * hands a micro-batch the record says is begun to `adopt`: the object
 * stopped with it in flight (a commit after it would have written a newer
 * record), and its retries are to be judged by what it recorded.
 */
export class StateBook {
  readonly figures = new AdviceFigures(
    () => this.current().advice,
    () => void (this.changed = true),
  );
  readonly partitions = new PartitionBook(
    () => this.current().partitions,
    () => void (this.changed = true),
  );
  readonly counters = new MetricCounters(
    () => this.current().counters,
    () => void (this.changed = true),
  );
  private readonly row: StateRow;
  private stored: StoredState | undefined;
  private adopted = false;
  /**
   * Whether the rooms' figures changed since the current record: if not, the
   * next record carries the current one's as they are (a micro-batch's begin
   * writes a record with the figures unchanged; making the advisor's stored
   * form again each time cost ~2% of a webhook's CPU).
   */
  private changed = false;

  constructor(
    sql: SqlStorage,
    /** the newest record each outbox table holds (src/output/outbox.ts) */
    private readonly candidates: () => { v: number; s: string }[],
    private readonly adopt: (begun: BegunGroup) => void,
  ) {
    this.row = new StateRow(sql);
  }

  current(): StoredState {
    if (this.stored) return this.stored;
    const stored = this.row.read(this.candidates());
    this.stored = stored;
    if (!this.adopted) {
      this.adopted = true;
      if (stored.begun) this.adopt(stored.begun);
    }
    return stored;
  }

  sources(): Record<string, SourceProgress> {
    return sourcesOf(this.current());
  }

  /** The next record: the current one with `changes`, and the figures as they are in memory now. */
  next(changes: StateChanges): StoredState {
    const cur = this.current();
    const anew = this.changed;
    return {
      v: cur.v + 1,
      watermark: changes.watermark ?? cur.watermark,
      sources: changes.sources ? sourcesToStored(changes.sources) : cur.sources,
      advice: anew ? this.figures.stored() : cur.advice,
      partitions: anew ? this.partitions.stored() : cur.partitions,
      counters: anew ? countersToStored(this.counters.all()) : cur.counters,
      begun: changes.begun === undefined ? cur.begun : changes.begun,
    };
  }

  /** Writes the next record to the state row (outside a commit: a begin, an eviction fan-out, a flush dropping the rows that held the newest). */
  write(changes: StateChanges = {}): StoredState {
    return this.save(this.next(changes));
  }

  /** Writes `record` (from next()) to the state row. */
  save(record: StoredState): StoredState {
    this.row.write(record);
    return this.written(record);
  }

  /** `record` was written (in the state row, or in an outbox row by the commit): it is the current one. */
  written(record: StoredState): StoredState {
    this.stored = record;
    this.changed = false;
    return record;
  }

  /** The record and the figures in memory are read again (after a transaction that rolled back, or a drop). */
  forget(): void {
    this.stored = undefined;
    this.changed = false; // the rooms read the record again
    this.figures.forget();
    this.counters.forget();
    this.partitions.forget();
  }
}

/** A micro-batch's begin as a state record carries it. */
export function begunGroup(
  id: string,
  members: readonly { source: string; batchId: string; identity: string; watermark: number; begunAt: number; configVersion: number }[],
  at: number,
): BegunGroup {
  return { id, at, members: members.map((m) => [m.source, m.batchId, m.identity, m.watermark, m.begunAt, m.configVersion]) };
}

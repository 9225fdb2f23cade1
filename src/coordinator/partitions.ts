import type { ReportedPartition } from "../microbatch/commit-request";

/** Committed ledgers remembered per partition for dropping at its next call. */
export const MAX_FORGET_PER_PARTITION = 10_000;

/**
 * The Coordinator's book of its partitions: the figures each last reported
 * (state totals for numRowsTotal and /metrics, and the next expiry that picks
 * which partitions the eviction fan-out visits; part of the state record,
 * src/coordinator/state.ts, read once and kept, so a commit writes no row of
 * its own for them however many partitions it touched) and
 * the committed ledgers each may drop, carried by the next call to it. The
 * calls themselves, alarms and transactions stay in the Coordinator.
 */
export class PartitionBook {
  /** In memory: the partitions' 7-day prune is the backstop for lists lost with the object. */
  private forgetLists = new Map<number, string[]>();

  /** p → [rows, bytes, watermark, next expiry (0: not known, so due)], as stored */
  private cached: Map<number, [number, number, number, number | null]> | undefined;

  constructor(
    /** the figures as the newest state record holds them */
    private readonly read: () => [number, number, number, number, number | null][],
    /** called when they change (the next record must carry them anew) */
    private readonly touched: () => void = () => undefined,
  ) {}

  /** Records the last figures partitions reported (in memory: the state record written next carries them). */
  record(stats: Iterable<ReportedPartition>): void {
    const reported = [...stats];
    if (reported.length === 0) return;
    const m = this.load();
    // Figures that name no partition are refused (the table's INTEGER key did that before): the commit around them fails whole.
    for (const s of reported) if (!Number.isInteger(s.p) || s.p < 0) throw new Error(`figures for partition ${String(s.p)}: not a partition number`);
    for (const s of reported) m.set(s.p, [s.rows, s.bytes, s.watermark, s.nextExpiry === undefined ? 0 : s.nextExpiry]);
    this.touched();
  }

  /** The figures as a state record keeps them. */
  stored(): [number, number, number, number, number | null][] {
    return [...this.load()].map(([p, f]) => [p, ...f]);
  }

  /** The state over all partitions, as they last reported it. */
  totals(): { rows: number; bytes: number } {
    let rows = 0;
    let bytes = 0;
    for (const [r, b] of this.load().values()) (rows += r), (bytes += b);
    return { rows, bytes };
  }

  /** Each partition's rows and bytes as last reported. */
  figures(): Map<number, { rows: number; bytes: number }> {
    return new Map([...this.load()].map(([p, [rows, bytes]]) => [p, { rows, bytes }]));
  }

  /** Drops the figures kept in memory: after a transaction that rolled back, or a drop (read again next time). */
  forget(): void {
    this.cached = undefined;
  }

  private load(): Map<number, [number, number, number, number | null]> {
    if (this.cached) return this.cached;
    const list = this.read();
    this.cached = new Map(list.map(([p, ...f]) => [p, f as [number, number, number, number | null]]));
    return this.cached;
  }

  /**
   * Partitions with a key due under `watermark` (by the last figures they
   * reported; every apply evicts first anyway, so a stale figure delays
   * clean-up, never a decision).
   */
  due(watermark: number): number[] {
    return [...this.load()]
      .filter(([, f]) => f[3] !== null && f[3] <= watermark)
      .map(([p]) => p)
      .sort((a, b) => a - b);
  }

  /** Remembers a committed ledger (`{source}\n{batchId}`) for partition `p` to drop; past the cap it is left to the prune. */
  forgetLater(p: number, ledger: string): void {
    let list = this.forgetLists.get(p);
    if (!list) this.forgetLists.set(p, (list = []));
    if (list.length < MAX_FORGET_PER_PARTITION) list.push(ledger);
  }

  /** Drops every list and the figures kept (the stream was deleted). */
  forgetAll(): void {
    this.forgetLists.clear();
    this.cached = undefined;
  }

  /** The ledgers partition `p` may drop, handed over once: its next call carries them. */
  takeForget(p: number): string[] {
    const list = this.forgetLists.get(p) ?? [];
    this.forgetLists.delete(p);
    return list;
  }
}

import type { StreamConfig } from "./config";
import { stateKeyFor, type DedupSettings, type Decision } from "./dedup";
import { partitionFor } from "./hash";
import { isRejected, validateRow, type AcceptedRow, type RejectedRow, type Row, type RowContext } from "./schema";
import { ColumnBudget, maxColumnsOf } from "./table-fields";

/** One batch, validated and split by partition; nothing decided yet. */
export interface BatchPlan {
  input: number;
  rejected: RejectedRow[];
  /** partition → its accepted rows, in input order */
  subBatches: Map<number, AcceptedRow[]>;
  /** max event time over accepted rows (they all count toward the watermark) */
  maxEventTime: number | null;
  /** the accepted rows' event times in input order (rows without one left out): the delay advisor's disorder */
  eventTimes: number[];
  /** a stream with a table: the columns its accepted rows add to those the table had (src/stream/table-fields.ts) */
  newColumns?: readonly string[];
}

export function planBatch(config: StreamConfig, rows: readonly unknown[], now: number, context?: RowContext): BatchPlan {
  const rejected: RejectedRow[] = [];
  const subBatches = new Map<number, AcceptedRow[]>();
  let maxEventTime: number | null = null;
  const eventTimes: number[] = [];
  // A table takes only rows whose field names can be its columns, within its column cap.
  const columns = config.table ? new ColumnBudget([...Object.keys(config.schema), ...(context?.tableColumns ?? [])], maxColumnsOf(config)) : null;
  rows.forEach((raw, index) => {
    const r = validateRow(config, raw, index, now, context);
    const unfit = columns && !isRejected(r) ? columns.admit(raw as object) : null;
    if (isRejected(r) || unfit !== null) {
      rejected.push(isRejected(r) ? r : { index, error: unfit! });
      return;
    }
    const p = partitionFor(r.key, config.partitions);
    let sub = subBatches.get(p);
    if (!sub) subBatches.set(p, (sub = []));
    sub.push(r);
    if (r.eventTime !== null) eventTimes.push(r.eventTime);
    if (r.eventTime !== null && (maxEventTime === null || r.eventTime > maxEventTime)) maxEventTime = r.eventTime;
  });
  return { input: rows.length, rejected, subBatches, maxEventTime, eventTimes, ...(columns ? { newColumns: columns.newColumns } : {}) };
}

/** Where one row's key lives: its state key and partition, keyed and routed as ingest does; or why it has none. */
export function locateRow(config: StreamConfig, row: unknown, now: number): { stateKey: string; partition: number } | { error: string } {
  const plan = planBatch(config, [row], now);
  if (plan.rejected.length > 0) return { error: plan.rejected[0].error };
  const [[partition, [accepted]]] = [...plan.subBatches];
  return { stateKey: stateKeyFor(dedupSettings(config), accepted), partition };
}

export function dedupSettings(config: StreamConfig): DedupSettings {
  return { mode: config.mode, delay: config.watermarkDelay, hasEventTime: config.eventTime !== null, ...(config.stateKeys === "hashed" ? { hashedKeys: true } : {}) };
}

export interface BatchCounts {
  input: number;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: RejectedRow[];
}

/** A row dropped by the watermark, with what it was judged by, for the late lane. */
export interface LateRow {
  index: number;
  row: Row;
  eventTime: number | null;
  partition: number;
}

/**
 * Joins the partitions' decisions back into input order: the emitted rows (the
 * batch's output), the late rows, and the counts, for which
 * emitted + duplicates + late + rejected.length == input.
 */
export function mergeDecisions(
  plan: BatchPlan,
  decisions: Map<number, string>,
): { emitted: Row[]; late: LateRow[]; counts: BatchCounts } {
  const kept: { index: number; row: Row }[] = [];
  const late: LateRow[] = [];
  let duplicates = 0;
  for (const [p, rows] of plan.subBatches) {
    const codes = decisions.get(p);
    if (codes === undefined || codes.length !== rows.length) {
      throw new Error(`partition ${p} returned ${codes?.length ?? "no"} decisions for ${rows.length} rows`);
    }
    rows.forEach((r, i) => {
      const d = codes[i] as Decision;
      if (d === "e") kept.push({ index: r.index, row: r.row });
      else if (d === "d") duplicates++;
      else late.push({ index: r.index, row: r.row, eventTime: r.eventTime, partition: p });
    });
  }
  const byIndex = (a: { index: number }, b: { index: number }) => a.index - b.index;
  const emitted = kept.sort(byIndex).map((x) => x.row);
  late.sort(byIndex);
  return {
    emitted,
    late,
    counts: { input: plan.input, emitted: emitted.length, duplicates, late: late.length, rejected: plan.rejected },
  };
}

/** The batch's output object: emitted rows as NDJSON, byte-identical on every replay. */
export function encodeOutput(rows: readonly Row[]): string {
  return rows.map((r) => JSON.stringify(r) + "\n").join("");
}

/**
 * The late and rejected lanes: each row as sent (late rows after coercion),
 * with why it was dropped, so it can be inspected and re-ingested.
 */
export function encodeLate(
  batch: { source: string; batchId: string },
  late: readonly LateRow[],
  watermarkOf: (partition: number) => number,
): string {
  return late
    .map((l) => JSON.stringify({ ...batch, index: l.index, reason: "late", eventTime: l.eventTime, watermark: watermarkOf(l.partition), row: l.row }) + "\n")
    .join("");
}

export function encodeRejected(batch: { source: string; batchId: string }, rejected: readonly RejectedRow[], rows: readonly unknown[]): string {
  return rejected.map((r) => JSON.stringify({ ...batch, index: r.index, reason: r.error, row: rows[r.index] }) + "\n").join("");
}

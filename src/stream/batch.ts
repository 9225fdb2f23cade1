import { parseBatchKey } from "./batch-key";
import type { StreamConfig } from "./config";
import { type DedupSettings, type Decision } from "./dedup";
import { partitionFor } from "./partition-for";
import { isRejected, rowJudge, type AcceptedRow, type RejectedRow, type Row, type RowContext } from "./schema";
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
  // What is the batch's, not the row's (the digest's blind fields, the caps), is worked out once.
  const judge = rowJudge(config, now, context);
  rows.forEach((raw, index) => {
    const r = judge(raw, index);
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

export function dedupSettings(config: StreamConfig): DedupSettings {
  return {
    mode: config.mode,
    delay: config.watermarkDelay,
    hasEventTime: config.eventTime !== null,
    ...(config.stateKeys === "hashed" ? { hashedKeys: true } : {}),
    ...(config.onConflict === "reject" ? { onConflict: "reject" as const } : {}),
    ...(config.keepDuplicates ? { keepDuplicates: true } : {}),
  };
}

export interface BatchCounts {
  input: number;
  emitted: number;
  /** rows dropped against a kept copy, conflicts dropped among them */
  duplicates: number;
  late: number;
  /** copies whose content differed from the kept copy's (DESIGN §11): dropped ones are in duplicates too, rejected ones in rejected */
  conflicts?: number;
  rejected: RejectedRow[];
}

/** Where the kept copy of a dropped row's key is: its batch and, once that committed, its commit number. */
export interface KeptRef {
  batchId: string;
  source: string;
  /** the commit it took or takes (a batch of the same micro-batch commits with it); null: not committed when this row was judged, or forgotten */
  seq: number | null;
}

/** A row dropped against a kept copy: a duplicate (d) or a conflict (c dropped, x rejected). */
export interface DroppedRow {
  index: number;
  row: Row;
  verdict: "d" | "c" | "x";
  /** null: the kept copy was forgotten meanwhile (a retried batch's recorded decision) */
  kept: KeptRef | null;
}

/** A partition's ledger key `{source}\n{batchId}` as a kept copy's reference. */
export function keptRefOf(batch: string, seqOf: (source: string, batchId: string) => number | null): KeptRef {
  const { source, batchId } = parseBatchKey(batch);
  return { batchId, source, seq: seqOf(source, batchId) };
}

/**
 * Why a conflict was rejected, in the words its producer gets back. A kept
 * copy from another source is not named: a producer never learns another
 * source's batch ids or commits (the admin finds them in the conflicts lane).
 */
function conflictReason(kept: KeptRef | null, self: { source: string; batchId: string }): string {
  if (!kept) return "conflict: its content differs from the kept copy of its key";
  const where =
    kept.source !== self.source
      ? "kept from another source"
      : kept.batchId === self.batchId
        ? "an earlier row of this batch"
        : `batch "${kept.batchId}" from source "${kept.source}", ${kept.seq === null ? "committing with this one" : `commit ${kept.seq}`}`;
  return `conflict: its content differs from the kept copy of its key (${where})`;
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
  /** per partition, the kept copy's batch of its dropped rows, by position in the sub-batch (absent: not asked for) */
  keptBatches: ReadonlyMap<number, ReadonlyMap<number, string | null>> = new Map(),
  self: { source: string; batchId: string; seqOf: (source: string, batchId: string) => number | null } = { source: "", batchId: "", seqOf: () => null },
): { emitted: Row[]; late: LateRow[]; dropped: DroppedRow[]; counts: BatchCounts; maxEventTime: number | null } {
  // The emitted rows by input index (each index is in one sub-batch once), read out in order: no sort.
  const keptAt: (Row | undefined)[] = new Array(plan.input);
  const late: LateRow[] = [];
  const dropped: DroppedRow[] = [];
  let duplicates = 0;
  let conflicts = 0;
  // Rejected rows never move the watermark (DESIGN §2.1): a rejected conflict's event time is taken back out.
  let maxEventTime: number | null = null;
  for (const [p, rows] of plan.subBatches) {
    const codes = decisions.get(p);
    if (codes === undefined || codes.length !== rows.length) {
      throw new Error(`partition ${p} returned ${codes?.length ?? "no"} decisions for ${rows.length} rows`);
    }
    rows.forEach((r, i) => {
      const d = codes[i] as Decision;
      if (d !== "x" && r.eventTime !== null && (maxEventTime === null || r.eventTime > maxEventTime)) maxEventTime = r.eventTime;
      if (d === "e") keptAt[r.index] = r.row;
      else if (d === "l") late.push({ index: r.index, row: r.row, eventTime: r.eventTime, partition: p });
      else {
        if (d !== "x") duplicates++;
        if (d !== "d") conflicts++;
        const batch = keptBatches.get(p)?.get(i);
        dropped.push({ index: r.index, row: r.row, verdict: d, kept: batch ? keptRefOf(batch, self.seqOf) : null });
      }
    });
  }
  const byIndex = (a: { index: number }, b: { index: number }) => a.index - b.index;
  const emitted: Row[] = [];
  for (const row of keptAt) if (row !== undefined) emitted.push(row);
  late.sort(byIndex);
  dropped.sort(byIndex);
  // A rejected conflict is reported with the rows that failed validation, in input order.
  const refused = dropped.filter((x) => x.verdict === "x").map((x) => ({ index: x.index, error: conflictReason(x.kept, self) }));
  const rejected = refused.length === 0 ? plan.rejected : [...plan.rejected, ...refused].sort(byIndex);
  return {
    emitted,
    late,
    dropped,
    counts: { input: plan.input, emitted: emitted.length, duplicates, late: late.length, conflicts, rejected },
    maxEventTime,
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
export function encodeLate(batch: { source: string; batchId: string }, late: readonly LateRow[], watermarkOf: (partition: number) => number): string {
  return late
    .map((l) => JSON.stringify({ ...batch, index: l.index, reason: "late", eventTime: l.eventTime, watermark: watermarkOf(l.partition), row: l.row }) + "\n")
    .join("");
}

/**
 * The conflicts lane (every conflict, dropped or rejected) and the duplicates
 * lane (every row counted in duplicates, with keepDuplicates): each row as
 * sent after coercion, with the kept copy's reference.
 */
export function encodeDropped(batch: { source: string; batchId: string }, dropped: readonly DroppedRow[], lane: "conflicts" | "duplicates"): string {
  const verdict = { d: "duplicate", c: "dropped", x: "rejected" } as const;
  return dropped
    .filter((x) => (lane === "conflicts" ? x.verdict !== "d" : x.verdict !== "x"))
    .map((x) => JSON.stringify({ ...batch, index: x.index, ...(lane === "conflicts" ? { verdict: verdict[x.verdict] } : {}), kept: x.kept, row: x.row }) + "\n")
    .join("");
}

export function encodeRejected(batch: { source: string; batchId: string }, rejected: readonly RejectedRow[], rows: readonly unknown[]): string {
  return rejected.map((r) => rejectedLine(batch, r, rows[r.index]) + "\n").join("");
}

/** A rejected row as sent; one JSON cannot write (a BigInt, a cycle) goes as `null`: its reason says why it was refused. */
function rejectedLine(batch: { source: string; batchId: string }, r: RejectedRow, row: unknown): string {
  try {
    return JSON.stringify({ ...batch, index: r.index, reason: r.error, row });
  } catch {
    return JSON.stringify({ ...batch, index: r.index, reason: r.error, row: null });
  }
}

/**
 * The real pure pieces composed exactly as the service composes them, with the
 * Durable Objects replaced by plain in-memory state:
 *
 *   begin:   the coordinator records the global watermark; the worker plans the batch
 *   apply:   per partition p, pw = max(partition wm, batch wm); evict keys with
 *            isExpired(expiresAt, pw); applyBatch(settings, pw, rows, remembered);
 *            insert the new keys (src/partition/partition.ts)
 *   advance: prompt eviction: a partition is raised to the global watermark
 *   commit:  mergeDecisions, then advanceWatermark (src/coordinator/coordinator.ts)
 */
import { dedupSettings, mergeDecisions, planBatch, type BatchCounts, type BatchPlan } from "../../src/stream/batch";
import { parseStreamConfig, type StreamConfig } from "../../src/stream/config";
import { applyBatch, isExpired } from "../../src/stream/dedup";
import type { Row } from "../../src/stream/schema";
import { advanceWatermark, INITIAL_WATERMARK, type WatermarkState } from "../../src/stream/watermark";

/** e(mitted), d(uplicate), l(ate), r(ejected), c/x (a conflict dropped/rejected), one per input row */
export type RowDecision = "e" | "d" | "l" | "r" | "c" | "x";

export interface SimPartition {
  watermark: number;
  keys: Map<string, { eventTime: number | null; expiresAt: number | null; digest: string | null }>;
}

export interface RunningBatch {
  source: string;
  plan: BatchPlan;
  /** the global watermark when the batch began: what it is judged by */
  watermark: number;
  /** partition → its decision codes */
  decided: Map<number, string>;
  committed: boolean;
}

export interface CommittedBatch {
  source: string;
  watermark: number;
  watermarkAfter: number;
  emitted: Row[];
  counts: BatchCounts;
  decisions: RowDecision[];
}

export class Pipeline {
  readonly config: StreamConfig;
  readonly partitions: SimPartition[];
  wm: WatermarkState = INITIAL_WATERMARK;

  constructor(
    body: unknown,
    readonly now: number,
  ) {
    const r = parseStreamConfig(body);
    if (!r.ok) throw new Error(`invalid stream config: ${JSON.stringify(r.errors)}`);
    this.config = r.config;
    this.partitions = Array.from({ length: this.config.partitions }, () => ({ watermark: 0, keys: new Map() }));
  }

  begin(source: string, rows: readonly unknown[]): RunningBatch {
    return { source, plan: planBatch(this.config, rows, this.now), watermark: this.wm.watermark, decided: new Map(), committed: false };
  }

  /** Partition p decides its sub-batch of `b`; returns the watermark it judged by. */
  apply(b: RunningBatch, p: number): number {
    if (b.committed) throw new Error("apply after commit");
    if (b.decided.has(p)) throw new Error(`partition ${p} applied twice`);
    const rows = b.plan.subBatches.get(p);
    if (!rows) throw new Error(`partition ${p} has no rows in this batch`);
    const part = this.partitions[p];
    const pw = this.raise(part, b.watermark);
    const { decisions, inserts } = applyBatch(
      dedupSettings(this.config),
      pw,
      rows,
      (k) => part.keys.has(k),
      (k) => part.keys.get(k)?.digest ?? null,
    );
    if (decisions.length !== rows.length) throw new Error("one decision per row");
    for (const i of inserts) {
      // the partition's keys table has the state key as its primary key
      if (part.keys.has(i.stateKey)) throw new Error(`insert of a remembered key ${i.stateKey}`);
      part.keys.set(i.stateKey, { eventTime: i.eventTime, expiresAt: i.expiresAt, digest: i.digest ?? null });
    }
    b.decided.set(p, decisions.join(""));
    return pw;
  }

  /** Prompt eviction: the coordinator pushes the global watermark to partition p. */
  advance(p: number): void {
    this.raise(this.partitions[p], this.wm.watermark);
  }

  advanceAll(): void {
    for (let p = 0; p < this.partitions.length; p++) this.advance(p);
  }

  commit(b: RunningBatch): CommittedBatch {
    if (b.committed) throw new Error("committed twice");
    const { emitted, counts, maxEventTime } = mergeDecisions(b.plan, b.decided);
    this.wm = advanceWatermark(this.config, this.wm, b.source, maxEventTime, this.now);
    b.committed = true;
    const decisions: RowDecision[] = Array.from({ length: b.plan.input }, () => "?" as RowDecision);
    for (const r of counts.rejected) decisions[r.index] = "r";
    for (const [p, rows] of b.plan.subBatches) {
      const codes = b.decided.get(p)!;
      rows.forEach((r, i) => (decisions[r.index] = codes[i] as RowDecision));
    }
    if (decisions.includes("?" as RowDecision)) throw new Error("a row without a decision");
    return { source: b.source, watermark: b.watermark, watermarkAfter: this.wm.watermark, emitted, counts, decisions };
  }

  /** A batch begun, applied on every partition it touches, and committed. */
  run(source: string, rows: readonly unknown[]): CommittedBatch {
    const b = this.begin(source, rows);
    for (const p of b.plan.subBatches.keys()) this.apply(b, p);
    return this.commit(b);
  }

  /** Every partition's remembered keys and their expiry, sorted. */
  stateEntries(): [string, number | null][] {
    return this.partitions
      .flatMap((part) => [...part.keys].map(([k, e]): [string, number | null] => [k, e.expiresAt]))
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  private raise(part: SimPartition, watermark: number): number {
    part.watermark = Math.max(part.watermark, watermark);
    for (const [k, e] of [...part.keys]) if (isExpired(e.expiresAt, part.watermark)) part.keys.delete(k);
    return part.watermark;
  }
}

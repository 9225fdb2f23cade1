import type { BatchOutcome, ProgressReport } from "../stream/report";
import { decodeStoredReport, encodeStoredReport } from "../stream/stored-report";
import type { Lane, LaneKeys } from "../sink";
import type { Outbox } from "../outbox";

/** A batch's ledger row as admission and commit read it. */
export type BatchRow = { body_hash: string; watermark: number; begun_at: number; config_version: number; seq: number | null; report: string | null };

/**
 * A batch's identity is its parse mode and body hash ("ndjson:<sha256>" or the
 * bare hash for JSON). Records from before the mode was part of it hold a bare
 * hash, which still matches its own body.
 */
export function sameBody(stored: string, given: string): boolean {
  return stored === given || (!stored.includes(":") && given.endsWith(`:${stored}`));
}

/** The outcome a committed batch's retry is answered with: its first answer, marked replayed. */
export function recordedOutcome(row: { report: string | null; seq: number | null }, source: string, batchId: string): BatchOutcome {
  return { ...decodeStoredReport(row.report!, source, batchId, row.seq!).outcome, replayed: true };
}

/**
 * The Coordinator's batch ledger (the `batches` table, created by
 * COORDINATOR_MIGRATIONS): one row per batch id, written when its first
 * attempt begins and completed by its commit with a commit number, the keys
 * of its lanes and its stored report. It doubles as the progress log and as
 * the commit index that /output reads. One statement per operation: the
 * bench counts them. The caller checks that the tables exist.
 */
export class BatchLedger {
  /** The last commit number; only this object's commits change it (forget() after each transaction). */
  private cachedSeq: number | undefined;

  constructor(
    private readonly sql: SqlStorage,
    /** where commit-index references into the outbox resolve */
    private readonly outbox: Outbox,
  ) {}

  /** Whether a batch id has begun (or committed). */
  known(source: string, batchId: string): boolean {
    return this.sql.exec("SELECT 1 FROM batches WHERE source = ? AND batch_id = ?", source, batchId).toArray().length > 0;
  }

  row(source: string, batchId: string): BatchRow | undefined {
    return this.sql
      .exec<BatchRow>(
        "SELECT body_hash, watermark, begun_at, config_version, seq, report FROM batches WHERE source = ? AND batch_id = ?", source, batchId,
      )
      .toArray()[0];
  }

  /** Records a batch's first attempt: the body it must keep and the watermark, time and config it is judged by. */
  begin(source: string, batchId: string, identity: string, watermark: number, begunAt: number, configVersion: number): void {
    this.sql.exec(
      "INSERT INTO batches (source, batch_id, body_hash, watermark, begun_at, config_version) VALUES (?, ?, ?, ?, ?, ?)",
      source, batchId, identity, watermark, begunAt, configVersion,
    );
  }

  /** Completes a begun batch's row as commit number `seq` (inside the commit's transaction). */
  commit(seq: number, b: { source: string; batchId: string; objects: LaneKeys }, outcome: BatchOutcome, report: ProgressReport): void {
    this.sql.exec(
      "UPDATE batches SET seq = ?, data_key = ?, late_key = ?, rejected_key = ?, report = ? WHERE source = ? AND batch_id = ?",
      seq, b.objects.data, b.objects.late, b.objects.rejected, encodeStoredReport(outcome, report), b.source, b.batchId,
    );
  }

  /** The last commit number (0 before the first commit). */
  lastSeq(): number {
    this.cachedSeq ??= this.sql.exec<{ s: number }>("SELECT coalesce(max(seq), 0) AS s FROM batches WHERE seq IS NOT NULL").one().s;
    return this.cachedSeq;
  }

  /** Drops the cached commit number: after a commit's transaction (one rolled back leaves it as storage is), or a drop. */
  forget(): void {
    this.cachedSeq = undefined;
  }

  /** The most recent `limit` progress reports, oldest first. */
  progress(limit: number): ProgressReport[] {
    return this.sql
      .exec<{ report: string; source: string; batch_id: string; seq: number }>("SELECT report, source, batch_id, seq FROM batches WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT ?", limit)
      .toArray()
      .map((r) => decodeStoredReport(r.report, r.source, r.batch_id, r.seq).progress)
      .reverse();
  }

  /** Committed batches that wrote to `lane`, in commit order, after commit number `afterSeq`. */
  commits(lane: Exclude<Lane, "conflicts" | "duplicates">, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[] {
    const column = { data: "data_key", late: "late_key", rejected: "rejected_key" }[lane];
    const rows = this.sql
      .exec<{ seq: number; key: string }>(
        `SELECT seq, ${column} AS key FROM batches WHERE seq > ? AND seq <= ? AND ${column} IS NOT NULL ORDER BY seq LIMIT ?`,
        afterSeq, upToSeq, limit,
      )
      .toArray();
    // Rows still in the outbox come back as bytes; flushed ones as their object range.
    const resolved = this.outbox.resolve(rows.map((c) => c.key));
    return rows.map((c, i) => ({ seq: c.seq, ...resolved[i] }));
  }
}

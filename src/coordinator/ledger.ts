import type { BatchOutcome, ProgressReport } from "../stream/batch-outcome";
import { decodeStoredOutcome, encodeStoredOutcome } from "../stream/stored-outcome";
import { Outbox } from "../output/outbox";
import type { RememberedGroup } from "./window";
import { BegunRecords } from "./begun-records";
import {
  LANE_INDEX,
  MEMBER_IDENTITY,
  MEMBER_REPORT,
  memberRecord,
  type BatchRow,
  type BegunRecord,
  type CommittedRecord,
  type GroupRecord,
  type LedgerLane,
} from "./ledger-records";
import { CommittedIds } from "./id-index";
import { batchKey } from "../stream/batch-key";

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
  return { ...decodeStoredOutcome(row.report!, source, batchId, row.seq!).outcome, replayed: true };
}

/** A stored report longer than this is kept apart, a row of `batches` (a batch with many rejected rows: their errors are in it). */
export const RECORD_INLINE_MAX_BYTES = 512;

/**
 * The Coordinator's batch ledger (tables of LEDGER_MIGRATION): what a batch
 * id's retry is answered with, the progress log and the commit index that
 * /output and publication read. Written once per micro-batch where the
 * contract allows: the group's commit record, which holds each member's
 * record (its body's hash and stored report) and which a small
 * micro-batch's outbox row carries until its flush moves it here
 * (Coordinator migration 9: one `groups` row per flushed run of
 * micro-batches, `spans` listing each). A retry finds its id's record
 * through CommittedIds (src/coordinator/id-index.ts, migration 10): no row
 * per id. `batches` keeps the records kept apart: a stored report larger
 * than RECORD_INLINE_MAX_BYTES (a batch with many rejected rows), which
 * would make the commit record too large, and the ids committed before
 * migration 10, until the window forgets them.
 * Begin records (`begun`) are kept only for attempts that failed, or that a
 * restarted Coordinator found begun (src/coordinator/state.ts): a micro-batch
 * that begins and commits in one run has its begin in a state record.
 * Forgotten after the idempotency window (prune(), driven by the alarm). One
 * statement per operation: the bench counts them. The caller checks that the
 * tables exist.
 */
export class BatchLedger {
  /** The last commit number; only this object's commits change it (forget() after each transaction). */
  private cachedSeq: number | undefined;
  /** begin records of micro-batches not committed (./begun-records.ts) */
  private readonly begun: BegunRecords;
  /** whether `batches` holds records kept apart (read once; kept up to date by commit and prune) */
  private apartRows: boolean | undefined;
  /** where a committed id's record is (src/coordinator/id-index.ts) */
  private readonly ids: CommittedIds;

  constructor(
    private readonly sql: SqlStorage,
    /** where commit-index references into the outbox resolve */
    private readonly outbox: Outbox,
    /** the commit number before this shard's first (src/stream/shards.ts seqBase: 0 for shard 0) */
    private readonly base: () => number = () => 0,
  ) {
    this.ids = new CommittedIds(sql, (after) => this.committedAfter(after));
    this.begun = new BegunRecords(sql);
  }

  /** Whether a batch id has begun (or committed and is still remembered). */
  known(source: string, batchId: string): boolean {
    return this.row(source, batchId) !== undefined;
  }

  /**
   * A batch id's record: committed first, else a begin record of it. An id
   * never seen (the common case) costs no statement once the index is read.
   */
  row(source: string, batchId: string): BatchRow | undefined {
    return this.committedRow(source, batchId) ?? this.begun.find(source, batchId);
  }

  /** A committed id's record: from the commit records the index points at (its report there, or kept apart), else (ids from before migration 10) a row of `batches`. */
  private committedRow(source: string, batchId: string): BatchRow | undefined {
    const at = this.ids.locate(batchKey(source, batchId));
    const ranges = at === null ? [] : "seq" in at ? [[at.seq, at.seq]] : at.ranges;
    for (const [first, last] of ranges) {
      const found = this.sql
        .exec<BatchRow>(
          `SELECT json_extract(m.value, '$[${MEMBER_IDENTITY}]') AS body_hash, 0 AS watermark, 0 AS begun_at, 0 AS config_version, g.first_seq + m.key AS seq,
             json_extract(m.value, '$[${MEMBER_REPORT}]') AS report, NULL AS begun
           FROM (${this.index()}) g, json_each(g.members) m
           WHERE g.seq >= ?1 AND g.first_seq <= ?2 AND g.first_seq + m.key BETWEEN ?1 AND ?2
             AND json_extract(m.value, '$[0]') = ?3 AND json_extract(m.value, '$[1]') = ?4 AND json_extract(m.value, '$[${MEMBER_IDENTITY}]') IS NOT NULL`,
          first,
          last,
          source,
          batchId,
        )
        .toArray()[0];
      if (found && found.report !== null) return found;
      if (found) return { ...found, report: this.apart(source, batchId)?.report ?? null };
    }
    return this.apart(source, batchId);
  }

  /** A record kept apart in `batches` (none: no statement). */
  private apart(source: string, batchId: string): BatchRow | undefined {
    if (!this.hasApart()) return undefined;
    return this.sql
      .exec<BatchRow>(
        "SELECT body_hash, 0 AS watermark, 0 AS begun_at, 0 AS config_version, seq, report, NULL AS begun FROM batches WHERE source = ?1 AND batch_id = ?2",
        source,
        batchId,
      )
      .toArray()[0];
  }

  /** The ids committed after commit `after` whose records hold them (what CommittedIds keeps exactly), one statement. */
  private *committedAfter(after: number): Iterable<[string, number]> {
    const rows = this.sql
      .exec<{ source: string; batch_id: string; seq: number }>(
        `SELECT json_extract(m.value, '$[0]') AS source, json_extract(m.value, '$[1]') AS batch_id, g.first_seq + m.key AS seq
         FROM (${this.index()}) g, json_each(g.members) m
         WHERE g.seq > ?1 AND g.first_seq + m.key > ?1 AND json_extract(m.value, '$[${MEMBER_IDENTITY}]') IS NOT NULL`,
        after,
      )
      .toArray();
    for (const r of rows) yield [batchKey(r.source, r.batch_id), r.seq];
  }

  private hasApart(): boolean {
    this.apartRows ??= this.sql.exec("SELECT 1 FROM batches LIMIT 1").toArray().length > 0;
    return this.apartRows;
  }

  /** Records a micro-batch's begin: each member with the body it must keep and the watermark, time and config it is judged by. */
  begin(id: string, members: readonly BegunRecord[], at: number): void {
    this.begun.add(id, members, at);
  }

  /**
   * Records a micro-batch's commit (inside the commit's transaction): its
   * members as commit numbers `firstSeq`…, each with its record, in the
   * group's record (its row, or its outbox row's columns), their ids in the
   * index, and drops its begin record. Older begin records (attempts that
   * failed) lose the members committed now; emptied ones go.
   */
  commit(
    begun: string | null,
    firstSeq: number,
    committedAt: number,
    maxEventTime: number | null,
    members: readonly CommittedRecord[],
    /** "outbox": the group's record rides in its outbox row (returned; src/output/outbox.ts), not a row of its own */
    placement: "groups" | "outbox" = "groups",
  ): GroupRecord | null {
    if (members.length === 0) return null;
    const reports = members.map((m) => encodeStoredOutcome(m.outcome, m.report));
    const apart = members.flatMap((m, i) => (reports[i].length > RECORD_INLINE_MAX_BYTES ? [[m.source, m.batchId, m.identity, firstSeq + i, reports[i]]] : []));
    if (apart.length > 0) {
      this.sql.exec(
        `INSERT INTO batches (source, batch_id, body_hash, seq, report)
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?)`,
        JSON.stringify(apart),
      );
      this.apartRows = true;
    }
    const record: GroupRecord = {
      seq: firstSeq + members.length - 1,
      firstSeq,
      committedAt,
      maxEventTime,
      members: `[${members.map((m, i) => memberRecord(m, reports[i].length > RECORD_INLINE_MAX_BYTES ? "null" : reports[i])).join(",")}]`,
    };
    if (placement === "groups") {
      this.sql.exec(
        "INSERT INTO groups (seq, first_seq, committed_at, max_t, members) VALUES (?, ?, ?, ?, ?)",
        record.seq,
        record.firstSeq,
        record.committedAt,
        record.maxEventTime,
        record.members,
      );
    }
    this.ids.add(members.map((m, i) => [batchKey(m.source, m.batchId), firstSeq + i]));
    this.begun.drop(begun, members);
    return record;
  }

  /** The last commit number (the shard's base, 0 for shard 0, before the first commit). */
  lastSeq(): number {
    this.cachedSeq ??= this.sql
      .exec<{ s: number }>(
        `SELECT coalesce(max(seq), ${this.base()}) AS s FROM (${["SELECT max(seq) AS seq FROM groups", ...this.outbox.lastSeqs()].join(" UNION ALL ")})`,
      )
      .one().s;
    return this.cachedSeq;
  }

  /**
   * Every commit record: the `groups` table's (flushed micro-batches, one row
   * per flushed run of them, and those that wrote their own objects) and the
   * ones still riding in outbox rows.
   */
  private index(): string {
    return ["SELECT seq, first_seq, members FROM groups", ...this.outbox.indexed()].join(" UNION ALL ");
  }

  /** After a commit's transaction: its last commit number, known without reading it back (the begin records' count, kept by commit(), stays). */
  committed(lastSeq: number): void {
    this.cachedSeq = lastSeq;
  }

  /** Drops the cached figures (read again when next asked): after a prune, or a config change. */
  forget(): void {
    this.cachedSeq = undefined;
    this.begun.forget();
  }

  /** Storage changed under every cache (a rolled-back transaction, the stream dropped): the id index too is read again. */
  reset(): void {
    this.forget();
    this.apartRows = undefined;
    this.ids.forget();
  }

  /** The most recent `limit` progress reports still remembered, oldest first. */
  progress(limit: number): ProgressReport[] {
    // Members committed before migration 10, and reports kept apart, are in `batches`.
    const apart = this.hasApart();
    return this.sql
      .exec<{ report: string; source: string; batch_id: string; seq: number }>(
        `SELECT ${apart ? `coalesce(json_extract(m.value, '$[${MEMBER_REPORT}]'), b.report)` : `json_extract(m.value, '$[${MEMBER_REPORT}]')`} AS report,
           json_extract(m.value, '$[0]') AS source, json_extract(m.value, '$[1]') AS batch_id, g.first_seq + m.key AS seq
         FROM (SELECT first_seq, members FROM (${["SELECT * FROM (SELECT seq, first_seq, members FROM groups ORDER BY seq DESC LIMIT ?1)", ...this.outbox.indexed()].join(" UNION ALL ")})
               ORDER BY seq DESC LIMIT ?1) g, json_each(g.members) m
         ${apart ? "LEFT JOIN batches b ON b.source = json_extract(m.value, '$[0]') AND b.batch_id = json_extract(m.value, '$[1]')" : ""}
         WHERE ${apart ? "b.report IS NOT NULL OR " : ""}json_extract(m.value, '$[${MEMBER_REPORT}]') IS NOT NULL
         ORDER BY g.first_seq + m.key DESC LIMIT ?1`,
        limit,
      )
      .toArray()
      .map((r) => decodeStoredOutcome(r.report, r.source, r.batch_id, r.seq).progress)
      .reverse();
  }

  /** Committed batches that wrote to `lane`, in commit order, after commit number `afterSeq` (as far back as remembered; the conflicts and duplicates lanes are LaneRefs'). */
  commits(lane: LedgerLane, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[] {
    const rows = this.sql
      .exec<{ seq: number; ref: string }>(
        `SELECT g.first_seq + m.key AS seq, json_extract(m.value, '$[${LANE_INDEX[lane]}]') AS ref
         FROM (${this.index()}) g, json_each(g.members) m
         WHERE g.seq > ?1 AND g.first_seq <= ?2 AND g.first_seq + m.key > ?1 AND g.first_seq + m.key <= ?2 AND ref IS NOT NULL
         ORDER BY seq LIMIT ?3`,
        afterSeq,
        upToSeq,
        limit,
      )
      .toArray();
    // Rows still in the outbox come back as bytes; flushed ones as their object range.
    const resolved = this.outbox.resolve(rows.map((c) => c.ref));
    return rows.map((c, i) => ({ seq: c.seq, ...resolved[i] }));
  }

  /**
   * The oldest `limit` committed groups but the newest (which holds the last
   * commit number), oldest first; only flushed ones (the `groups` table), and
   * none from the first still in the outbox on, so that what is forgotten is
   * always the oldest run of commit numbers. A row for a flushed run of
   * groups lists each (`spans`: [last seq, commit time − the row's, max event time]).
   */
  oldest(limit: number): RememberedGroup[] {
    const bound = Math.min(this.lastSeq(), this.outbox.firstSeq() ?? Infinity);
    return this.sql
      .exec<{ seq: number; committed_at: number; max_t: number | null }>(
        `SELECT json_extract(s.value, '$[0]') AS seq, g.committed_at + json_extract(s.value, '$[1]') AS committed_at, json_extract(s.value, '$[2]') AS max_t
         FROM (SELECT * FROM groups WHERE first_seq < ?1 ORDER BY seq LIMIT ?2) g, json_each(coalesce(g.spans, json_array(json_array(g.seq, 0, g.max_t)))) s
         WHERE json_extract(s.value, '$[0]') < ?1 ORDER BY 1 LIMIT ?2`,
        bound,
        limit,
      )
      .toArray()
      .map((g) => ({ seq: g.seq, committedAt: g.committed_at, maxEventTime: g.max_t }));
  }

  /** Forgets the committed groups up to commit number `upTo` and their batch ids (and where their outbox entries went); returns the ids forgotten. */
  prune(upTo: number): number {
    // The last outbox entry these commits point into: nothing kept points at it or before it.
    const refs = this.sql
      .exec<{ ref: string }>(
        `SELECT json_extract(m.value, '$[2]') AS ref FROM groups g, json_each(g.members) m
         WHERE g.first_seq <= ?1 AND g.first_seq + m.key <= ?1 AND ref LIKE 'outbox:%' ORDER BY g.first_seq + m.key DESC LIMIT 1`,
        upTo,
      )
      .toArray();
    const entry = refs.length > 0 ? Outbox.entryOf(refs[0].ref) : null;
    if (entry !== null) this.outbox.forgetFlushed(entry);
    const forgotten = this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM groups g, json_each(g.members) m WHERE g.first_seq <= ?1 AND g.first_seq + m.key <= ?1", upTo)
      .one().n;
    if (this.hasApart()) {
      this.sql.exec(
        `DELETE FROM batches WHERE (source, batch_id) IN
           (SELECT json_extract(m.value, '$[0]'), json_extract(m.value, '$[1]') FROM groups g, json_each(g.members) m WHERE g.first_seq <= ?1 AND g.first_seq + m.key <= ?1)`,
        upTo,
      );
      this.apartRows = undefined;
    }
    this.ids.prune(upTo);
    this.sql.exec("DELETE FROM groups WHERE seq <= ?", upTo);
    // A flushed run's row the prune ends inside keeps its later groups (prune steps end at a group's last commit number).
    this.sql.exec(
      `UPDATE groups SET
         members = (SELECT json_group_array(json(m.value)) FROM json_each(groups.members) m WHERE groups.first_seq + m.key > ?1),
         spans = (SELECT json_group_array(json(s.value)) FROM json_each(groups.spans) s WHERE json_extract(s.value, '$[0]') > ?1),
         first_seq = ?1 + 1
       WHERE first_seq <= ?1 AND seq > ?1`,
      upTo,
    );
    return forgotten;
  }

  /** Drops begin records older than `before` (their partitions' decisions are gone by then). */
  pruneBegun(before: number): void {
    this.begun.prune(before);
  }

  /** The first commit number the commit index holds (the shard's first, base + 1, when nothing was forgotten). */
  indexedFrom(): number {
    return this.firstSeq() ?? this.base() + 1;
  }

  /** How many commits this shard has made: its numbers run base + 1, base + 2, … with no gaps. */
  commitCount(): number {
    return this.lastSeq() - this.base();
  }

  /** The first commit number remembered (null: none committed). */
  private firstSeq(): number | null {
    const firsts = [
      ...this.sql
        .exec<{ n: number }>("SELECT first_seq AS n FROM groups ORDER BY seq LIMIT 1")
        .toArray()
        .map((r) => r.n),
      ...[this.outbox.firstSeq()].filter((n) => n !== null),
    ];
    return firsts.length > 0 ? Math.min(...firsts) : null;
  }

  /** Committed batch ids remembered: the commit numbers of the groups held (they are contiguous: pruned oldest first). */
  remembered(): number {
    const first = this.firstSeq();
    return first === null ? 0 : this.lastSeq() - first + 1;
  }
}

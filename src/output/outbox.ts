import { formatRef, outboxRef, parseRef } from "./object-ref";
import { outboxTable } from "./outbox-layout";
import { LANES, writeGroup, type Lane } from "./sink";
import { runsOf, type GroupColumns } from "./commit-runs";

/**
 * Small micro-batches don't each write R2 objects: their lanes go into the
 * Coordinator's outbox (SQLite, in the commit's own transaction), and a flush
 * writes many of them as one object per lane and one marker. So a webhook
 * costs a sliver of an R2 write, and readers get objects of a useful size.
 *
 * A request's rows are at `outbox:<entry>/<lane>#offset+length` until the
 * flush, and at `<object>#offset+length` after it. What SQLite bills is rows
 * written, so the flush writes no row per entry (Coordinator migration 9):
 * it seals the outbox (renames the table; commits go on into a new one),
 * writes the sealed entries in chunks, records one row per chunk
 * (`outbox_chunks`: its objects and each entry's offsets) and drops the
 * sealed table whole (a DROP writes no rows; deleting entries one by one
 * wrote one each). A chunk is planned first (its entries fixed in
 * `flushes`), so one retried after a crash writes the same bytes to the same
 * keys (create-only) and then records them: nothing is lost or written twice.
 * An entry's id is fixed by its commit (the floor plus its first commit
 * number), not by AUTOINCREMENT, whose counter cost a second row per entry.
 */

/** A micro-batch whose lanes are larger than this writes its own objects. */
export const OUTBOX_MAX_ENTRY_BYTES = 256 * 1024;
/** A flush is due when the outbox holds this much, */
export const FLUSH_BYTES = 1024 * 1024;
/** or when its oldest entry is this old. */
export const FLUSH_AFTER_MS = 10_000;
/** One flush writes at most this much (more waits for the next). */
const FLUSH_MAX_BYTES = 8 * FLUSH_BYTES;

const LANE_REF = new RegExp(`^outbox:(\\d+)/(${LANES.join("|")})$`);

/** A commit record as the outbox row carries it until the flush moves it to `groups` (the ledger's GroupRecord). */
export interface OutboxGroup {
  seq: number;
  firstSeq: number;
  committedAt: number;
  maxEventTime: number | null;
  members: string;
}

const laneBytes = LANES.map((lane) => `length(${lane})`).join(" + ");

type Transact = <T>(fn: () => T) => T;

/** A flushed chunk: its objects per lane and, per entry, where its lanes start in them. */
interface Chunk {
  first: number;
  last: number;
  keys: Partial<Record<Lane, string>>;
  /** entry id → offset per lane (in LANES order; null: the entry had nothing in that lane) */
  offsets: Map<number, (number | null)[]>;
}

export class Outbox {
  /** flushed chunks read so far (they never change) */
  private chunks = new Map<number, Chunk>();
  /** what is waiting (pending()): read once, then kept up to date by append; a flush reads it again */
  private waiting: { bytes: number; oldest: number | null } | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Stores one micro-batch's lanes as entry `id` (call inside the commit's transaction), with the state record it carries. */
  append(
    id: number,
    lanes: Record<Lane, Uint8Array>,
    batches: readonly { source: string; batchId: string }[],
    now: number,
    record: { v: number; s: string },
    group: OutboxGroup,
  ): void {
    this.sql.exec(
      `INSERT INTO outbox (id, at, ${LANES.join(", ")}, batches, v, state, seq, first_seq, committed_at, max_t, members)
       VALUES (?, ?, ${LANES.map(() => "?").join(", ")}, ?, ?, ?, ?, ?, ?, ?, ?)`,
      id,
      now,
      ...LANES.map((lane) => blob(lanes[lane])),
      JSON.stringify(batches.map((b) => [b.source, b.batchId])),
      record.v,
      record.s,
      group.seq,
      group.firstSeq,
      group.committedAt,
      group.maxEventTime,
      group.members,
    );
    if (this.waiting) {
      this.waiting.bytes += LANES.reduce((n, lane) => n + lanes[lane].byteLength, 0);
      this.waiting.oldest ??= now;
    }
  }

  /** The commit records still in outbox rows, as SQL the ledger joins to its `groups` (seq, first_seq, members). */
  indexed(): string[] {
    return this.tables().map((t) => `SELECT seq, first_seq, members FROM ${t} WHERE members IS NOT NULL`);
  }

  /**
   * The first commit number still in an outbox row (null: none), one
   * statement. Ids follow commit numbers, so the lookup reads one row per table.
   */
  firstSeq(): number | null {
    const q = (t: string) => `SELECT * FROM (SELECT first_seq FROM ${t} WHERE members IS NOT NULL ORDER BY id LIMIT 1)`;
    return this.sql.exec<{ n: number | null }>(`SELECT min(first_seq) AS n FROM (${this.tables().map(q).join(" UNION ALL ")})`).one().n;
  }

  /** SQL for the last commit number in each outbox table (one row read each: ids follow commit numbers). */
  lastSeqs(): string[] {
    return this.tables().map((t) => `SELECT * FROM (SELECT seq FROM ${t} WHERE members IS NOT NULL ORDER BY id DESC LIMIT 1)`);
  }

  /** The newest state record each outbox table holds (src/coordinator/state.ts picks the newest of all). */
  records(): { v: number; s: string }[] {
    return this.tables().flatMap((t) =>
      this.sql.exec<{ v: number; s: string }>(`SELECT v, state AS s FROM ${t} WHERE v IS NOT NULL ORDER BY id DESC LIMIT 1`).toArray(),
    );
  }

  /** The tables holding waiting entries: the sealed ones a flush is draining (empty between flushes), and the outbox. */
  private tables(): string[] {
    return ["outbox_sealed", "outbox"];
  }

  /** Storage was deleted (the stream dropped), or a commit rolled back: read afresh. */
  forget(): void {
    this.chunks.clear();
    this.waiting = undefined;
  }

  /**
   * Drops where flushed entries up to `entry` went, once no commit-index
   * reference points at them (the ledger forgot their commits): entries are
   * numbered in commit order, so the ones kept all come later.
   */
  forgetFlushed(entry: number): void {
    this.sql.exec("DELETE FROM outbox_flushed WHERE id <= ?", entry);
    this.sql.exec("DELETE FROM outbox_chunks WHERE last <= ?", entry);
    for (const c of this.chunks.values()) if (c.last <= entry) this.chunks.delete(c.first);
  }

  /** The entry number a commit-index reference points into (null: an R2 object's). */
  static entryOf(ref: string): number | null {
    const m = /^outbox:(\d+)\//.exec(ref);
    return m ? Number(m[1]) : null;
  }

  /** The commit-index reference to a member's range of an entry's lane. */
  static ref(entry: number, lane: Lane, range: { offset: number; length: number }): string {
    return outboxRef(entry, lane, range);
  }

  /**
   * Where commit-index references point now: an R2 object range, or the
   * outbox (their bytes). A few statements for any number of references.
   */
  resolve(refs: readonly string[]): ({ ref: string } | { bytes: Uint8Array })[] {
    const parsed = refs.map((ref) => {
      const r = parseRef(ref);
      const m = LANE_REF.exec(r.key);
      return m && r.range ? { entry: Number(m[1]), lane: m[2] as Lane, range: r.range } : null;
    });
    const ids = [...new Set(parsed.flatMap((p) => (p ? [p.entry] : [])))];
    if (ids.length === 0) return refs.map((ref) => ({ ref }));
    const entries = JSON.stringify(ids);
    // Only the lanes asked for are read (a reader of /output needs no late or rejected bytes).
    const lanes = new Set(parsed.flatMap((p) => (p ? [p.lane] : [])));
    const columns = LANES.map((lane) => (lanes.has(lane) ? lane : `NULL AS ${lane}`)).join(", ");
    const waiting = new Map(
      this.tables().flatMap((t) =>
        this.sql
          .exec<{ id: number } & Record<Lane, ArrayBuffer>>(`SELECT id, ${columns} FROM ${t} WHERE id IN (SELECT value FROM json_each(?))`, entries)
          .toArray()
          .map((r) => [r.id, r] as const),
      ),
    );
    const flushed = ids.filter((id) => !waiting.has(id));
    const chunkOf = this.chunksFor(flushed);
    const legacy = new Map(
      flushed.some((id) => !chunkOf.has(id))
        ? this.sql
            .exec<{ id: number } & Record<Lane, string | null>>(
              `SELECT id, ${LANES.join(", ")} FROM outbox_flushed WHERE id IN (SELECT value FROM json_each(?))`,
              JSON.stringify(flushed.filter((id) => !chunkOf.has(id))),
            )
            .toArray()
            .map((r) => [r.id, r])
        : [],
    );
    return refs.map((ref, i) => {
      const p = parsed[i];
      if (!p) return { ref };
      const row = waiting.get(p.entry);
      if (row) return { bytes: new Uint8Array(row[p.lane], p.range.offset, p.range.length) };
      const chunk = chunkOf.get(p.entry);
      const start = chunk?.offsets.get(p.entry)?.[LANES.indexOf(p.lane)];
      if (chunk && start != null && chunk.keys[p.lane]) {
        return { ref: formatRef({ key: chunk.keys[p.lane]!, range: { offset: start + p.range.offset, length: p.range.length } }) };
      }
      const at = legacy.get(p.entry)?.[p.lane];
      if (at) {
        const base = parseRef(at);
        return { ref: formatRef({ key: base.key, range: { offset: base.range!.offset + p.range.offset, length: p.range.length } }) };
      }
      throw new Error(`outbox entry ${p.entry} is neither waiting nor flushed`);
    });
  }

  /** The chunks that hold these flushed entries (read once each, then kept). */
  private chunksFor(ids: readonly number[]): Map<number, Chunk> {
    const found = new Map<number, Chunk>();
    const known = [...this.chunks.values()];
    const missing = ids.filter((id) => {
      const c = known.find((k) => k.first <= id && id <= k.last);
      if (c) found.set(id, c);
      return !c;
    });
    if (missing.length === 0) return found;
    const rows = this.sql
      .exec<{ first: number; last: number; keys: string; offsets: string }>(
        `SELECT DISTINCT c.first, c.last, c.keys, c.offsets FROM json_each(?) e
         JOIN outbox_chunks c ON c.first = (SELECT max(first) FROM outbox_chunks WHERE first <= e.value) AND e.value <= c.last`,
        JSON.stringify(missing),
      )
      .toArray();
    for (const r of rows) {
      const chunk: Chunk = {
        first: r.first,
        last: r.last,
        keys: JSON.parse(r.keys),
        offsets: new Map((JSON.parse(r.offsets) as [number, ...(number | null)[]][]).map(([id, ...o]) => [id, o])),
      };
      this.chunks.set(chunk.first, chunk);
      for (const id of missing) if (chunk.first <= id && id <= chunk.last) found.set(id, chunk);
    }
    return found;
  }

  /** Bytes waiting and the oldest entry's time (null: nothing waits). */
  pending(): { bytes: number; oldest: number | null } {
    // A scan of every waiting entry, once: each commit asks (is a flush due?), so it is kept, not read per commit.
    if (!this.waiting) {
      const all = this.tables().map((t) =>
        this.sql.exec<{ bytes: number; oldest: number | null }>(`SELECT coalesce(sum(${laneBytes}), 0) AS bytes, min(at) AS oldest FROM ${t}`).one(),
      );
      const times = all.flatMap((a) => (a.oldest === null ? [] : [a.oldest]));
      this.waiting = { bytes: all.reduce((n, a) => n + a.bytes, 0), oldest: times.length > 0 ? Math.min(...times) : null };
    }
    return { ...this.waiting };
  }

  /**
   * Writes the next chunk of waiting entries (sealing the outbox first when
   * nothing is sealed) as one object per lane and one marker, then, in one
   * transaction, records where the chunk landed and drops its entries (the
   * whole sealed table once it is drained: `drained` runs in that
   * transaction, for what must outlive the rows dropped). Returns how many
   * entries it flushed.
   */
  async flush(bucket: R2Bucket, where: { stream: string; epoch: string }, transact: Transact, drained?: () => void): Promise<number> {
    this.waiting = undefined; // entries go: read again after
    const plan = transact(() => this.plan());
    if (!plan) return 0;
    const rows = this.sql
      .exec<{ id: number; batches: string } & Record<Lane, ArrayBuffer> & GroupColumns>(
        `SELECT id, ${LANES.join(", ")}, batches, seq, first_seq, committed_at, max_t, members FROM outbox_sealed WHERE id BETWEEN ? AND ? ORDER BY id`,
        plan.first,
        plan.last,
      )
      .toArray();
    const lanes = {} as Record<Lane, Uint8Array>;
    const offsets = rows.map(() => ({}) as Record<Lane, number>);
    for (const lane of LANES) {
      lanes[lane] = new Uint8Array(rows.reduce((n, r) => n + r[lane].byteLength, 0));
      let offset = 0;
      rows.forEach((r, i) => {
        lanes[lane].set(new Uint8Array(r[lane]), offset);
        offsets[i][lane] = offset;
        offset += r[lane].byteLength;
      });
    }
    const batches = rows.flatMap((r) => (JSON.parse(r.batches) as [string, string][]).map(([source, batchId]) => ({ source, batchId })));
    const keys = await writeGroup(bucket, { ...where, group: `f-${plan.first}` }, lanes, { stream: where.stream, flush: plan.first, batches });
    this.record(plan, rows, offsets, keys, drained, transact);
    this.waiting = undefined; // commits may have read it while the objects were written
    return rows.length;
  }

  /** Where a chunk landed, and its entries dropped (in one transaction). */
  private record(
    plan: { first: number; last: number },
    rows: ({ id: number } & Record<Lane, ArrayBuffer> & GroupColumns)[],
    offsets: Record<Lane, number>[],
    keys: Partial<Record<Lane, string | null>>,
    drained: (() => void) | undefined,
    transact: Transact,
  ): void {
    transact(() => {
      const landed = rows.map((r, i) => [r.id, ...LANES.map((lane) => (keys[lane] && r[lane].byteLength > 0 ? offsets[i][lane] : null))]);
      const written = Object.fromEntries(LANES.flatMap((lane) => (keys[lane] ? [[lane, keys[lane]]] : [])));
      this.sql.exec(
        "INSERT OR REPLACE INTO outbox_chunks (first, last, keys, offsets) VALUES (?, ?, ?, ?)",
        plan.first,
        plan.last,
        JSON.stringify(written),
        JSON.stringify(landed),
      );
      this.sql.exec("DELETE FROM flushes WHERE first = ?", plan.first);
      // The commit records move to the ledger's `groups`: one row per run of consecutive commit numbers (one, unless
      // micro-batches that wrote their own objects came between), each listing its groups (spans).
      for (const run of runsOf(rows)) {
        const last = run[run.length - 1];
        const times = run.flatMap((g) => (g.max_t === null ? [] : [g.max_t]));
        this.sql.exec(
          "INSERT INTO groups (seq, first_seq, committed_at, max_t, members, spans) VALUES (?, ?, ?, ?, ?, ?)",
          last.seq,
          run[0].first_seq,
          last.committed_at,
          times.length > 0 ? Math.max(...times) : null,
          JSON.stringify(run.flatMap((g) => JSON.parse(g.members))),
          run.length > 1 ? JSON.stringify(run.map((g) => [g.seq, g.committed_at - last.committed_at, g.max_t])) : null,
        );
      }
      if (this.sql.exec("SELECT 1 FROM outbox_sealed WHERE id > ? LIMIT 1", plan.last).toArray().length > 0) {
        this.sql.exec("DELETE FROM outbox_sealed WHERE id BETWEEN ? AND ?", plan.first, plan.last); // a backlog of several chunks: rare
      } else {
        drained?.();
        this.sql.exec("DROP TABLE outbox_sealed");
        this.sql.exec(outboxTable("outbox_sealed"));
      }
    });
  }

  /** The planned chunk, or a new plan over the oldest sealed entries up to FLUSH_MAX_BYTES (at least one), sealing the outbox when nothing is sealed. */
  private plan(): { first: number; last: number } | null {
    const planned = this.sql.exec<{ first: number; last: number }>("SELECT first, last FROM flushes ORDER BY first LIMIT 1").toArray()[0];
    if (planned) return planned;
    const sealed = () => this.sql.exec<{ id: number; size: number }>(`SELECT id, ${laneBytes} AS size FROM outbox_sealed ORDER BY id LIMIT 10000`).toArray();
    let entries = sealed();
    if (entries.length === 0) {
      // Nothing sealed: the waiting entries become the sealed ones.
      if (this.sql.exec("SELECT 1 FROM outbox LIMIT 1").toArray().length === 0) return null;
      this.seal();
      entries = sealed();
    }
    let size = 0;
    let last = entries[0].id;
    for (const e of entries) {
      if (size > 0 && size + e.size > FLUSH_MAX_BYTES) break;
      size += e.size;
      last = e.id;
    }
    this.sql.exec("INSERT INTO flushes (first, last) VALUES (?, ?)", entries[0].id, last);
    return { first: entries[0].id, last };
  }

  /** The waiting entries become the sealed table the flush drains (the empty one goes); commits go on into a new outbox. */
  private seal(): void {
    this.sql.exec("DROP TABLE outbox_sealed");
    this.sql.exec("ALTER TABLE outbox RENAME TO outbox_sealed");
    this.sql.exec(outboxTable("outbox"));
  }
}

/** SQLite stores ArrayBuffers as BLOBs: exactly the view's bytes. */
const blob = (u: Uint8Array): ArrayBuffer => u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;

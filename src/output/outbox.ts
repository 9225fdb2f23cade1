import { formatRef, parseRef } from "../microbatch/group";
import { LANES, writeGroup, type Lane } from "./sink";
import { addColumn } from "../storage/migrations";

/**
 * Small micro-batches don't each write R2 objects: their lanes go into the
 * Coordinator's outbox (SQLite, in the commit's own transaction), and a flush
 * writes many of them as one object per lane and one marker. So a webhook
 * costs a sliver of an R2 write, and readers get objects of a useful size.
 *
 * A request's rows are at `outbox:<entry>/<lane>#offset+length` until the
 * flush, and at `<object>#offset+length` after it (the flush records where
 * each entry landed). A flush is planned first (its entries fixed in
 * `flushes`), so one retried after a crash writes the same bytes to the same
 * keys (create-only) and then records them: nothing is lost or written twice.
 */

/** A micro-batch whose lanes are larger than this writes its own objects. */
export const OUTBOX_MAX_ENTRY_BYTES = 256 * 1024;
/** A flush is due when the outbox holds this much, */
export const FLUSH_BYTES = 1024 * 1024;
/** or when its oldest entry is this old. */
export const FLUSH_AFTER_MS = 10_000;
/** One flush writes at most this much (more waits for the next). */
const FLUSH_MAX_BYTES = 8 * FLUSH_BYTES;

const PREFIX = "outbox:";
const LANE_REF = new RegExp(`^outbox:(\\d+)/(${LANES.join("|")})$`);

// AUTOINCREMENT: entry ids are never reused, so a flushed entry's record stays unambiguous.
export const OUTBOX_TABLES = `
  CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, data BLOB NOT NULL,
    late BLOB NOT NULL, rejected BLOB NOT NULL, batches TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS outbox_flushed (id INTEGER PRIMARY KEY, data TEXT, late TEXT, rejected TEXT);
  CREATE TABLE IF NOT EXISTS flushes (first INTEGER PRIMARY KEY, last INTEGER NOT NULL);
`;

/** The conflicts and duplicates lanes (DESIGN §11) in the outbox: added by a later migration, empty for entries from before. */
export function addSameEventLanes(sql: SqlStorage): void {
  addColumn(sql, "outbox", "conflicts", "BLOB NOT NULL DEFAULT x''");
  addColumn(sql, "outbox", "duplicates", "BLOB NOT NULL DEFAULT x''");
  addColumn(sql, "outbox_flushed", "conflicts", "TEXT");
  addColumn(sql, "outbox_flushed", "duplicates", "TEXT");
}

const laneBytes = LANES.map((lane) => `length(${lane})`).join(" + ");

type Transact = <T>(fn: () => T) => T;

export class Outbox {
  constructor(private readonly sql: SqlStorage) {}

  /** Stores one micro-batch's lanes (call inside the commit's transaction); returns its entry id. */
  append(lanes: Record<Lane, Uint8Array>, batches: readonly { source: string; batchId: string }[], now: number): number {
    return this.sql
      .exec<{ id: number }>(
        `INSERT INTO outbox (at, ${LANES.join(", ")}, batches) VALUES (?, ${LANES.map(() => "?").join(", ")}, ?) RETURNING id`,
        now, ...LANES.map((lane) => blob(lanes[lane])), JSON.stringify(batches.map((b) => [b.source, b.batchId])),
      )
      .one().id;
  }

  /** The commit-index reference to a member's range of an entry's lane. */
  /**
   * Drops where flushed entries up to `entry` went, once no commit-index
   * reference points at them (the ledger forgot their commits): entries are
   * numbered in commit order, so the ones kept all come later.
   */
  forgetFlushed(entry: number): void {
    this.sql.exec("DELETE FROM outbox_flushed WHERE id <= ?", entry);
  }

  /** The entry number a commit-index reference points into (null: an R2 object's). */
  static entryOf(ref: string): number | null {
    const m = /^outbox:(\d+)\//.exec(ref);
    return m ? Number(m[1]) : null;
  }

  static ref(entry: number, lane: Lane, range: { offset: number; length: number }): string {
    return formatRef({ key: `${PREFIX}${entry}/${lane}`, range });
  }

  /**
   * Where commit-index references point now: an R2 object range, or the
   * outbox (their bytes). Two statements for any number of references.
   */
  resolve(refs: readonly string[]): ({ ref: string } | { bytes: Uint8Array })[] {
    const parsed = refs.map((ref) => {
      const r = parseRef(ref);
      const m = LANE_REF.exec(r.key);
      return m && r.range ? { entry: Number(m[1]), lane: m[2] as Lane, range: r.range } : null;
    });
    const entries = JSON.stringify([...new Set(parsed.flatMap((p) => (p ? [p.entry] : [])))]);
    if (entries === "[]") return refs.map((ref) => ({ ref }));
    const landed = new Map(
      this.sql
        .exec<{ id: number } & Record<Lane, string | null>>(
          `SELECT id, ${LANES.join(", ")} FROM outbox_flushed WHERE id IN (SELECT value FROM json_each(?))`, entries,
        )
        .toArray()
        .map((r) => [r.id, r]),
    );
    // Only the lanes asked for are read (a reader of /output needs no late or rejected bytes).
    const lanes = new Set(parsed.flatMap((p) => (p ? [p.lane] : [])));
    const columns = LANES.map((lane) => (lanes.has(lane) ? lane : `NULL AS ${lane}`)).join(", ");
    const waiting = new Map(
      this.sql
        .exec<{ id: number } & Record<Lane, ArrayBuffer>>(
          `SELECT id, ${columns} FROM outbox WHERE id IN (SELECT value FROM json_each(?))`, entries,
        )
        .toArray()
        .map((r) => [r.id, r]),
    );
    return refs.map((ref, i) => {
      const p = parsed[i];
      if (!p) return { ref };
      const at = landed.get(p.entry)?.[p.lane];
      if (at) {
        const base = parseRef(at);
        return { ref: formatRef({ key: base.key, range: { offset: base.range!.offset + p.range.offset, length: p.range.length } }) };
      }
      const row = waiting.get(p.entry);
      if (!row) throw new Error(`outbox entry ${p.entry} is neither waiting nor flushed`);
      return { bytes: new Uint8Array(row[p.lane], p.range.offset, p.range.length) };
    });
  }

  /** Bytes waiting and the oldest entry's time (null: nothing waits). */
  pending(): { bytes: number; oldest: number | null } {
    return this.sql
      .exec<{ bytes: number; oldest: number | null }>(
        `SELECT coalesce(sum(${laneBytes}), 0) AS bytes, min(at) AS oldest FROM outbox`,
      )
      .one();
  }

  /**
   * Writes the waiting entries (the planned flush first) as one object per
   * lane and one marker, then, in one transaction, records where each entry
   * landed and drops them. Returns how many entries it flushed.
   */
  async flush(bucket: R2Bucket, where: { stream: string; epoch: string }, transact: Transact): Promise<number> {
    const plan = transact(() => this.plan());
    if (!plan) return 0;
    const rows = this.sql
      .exec<{ id: number; batches: string } & Record<Lane, ArrayBuffer>>(
        `SELECT id, ${LANES.join(", ")}, batches FROM outbox WHERE id BETWEEN ? AND ? ORDER BY id`, plan.first, plan.last,
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
    transact(() => {
      const landed = rows.map((r, i) => {
        const at = (lane: Lane) =>
          keys[lane] && r[lane].byteLength > 0 ? formatRef({ key: keys[lane]!, range: { offset: offsets[i][lane], length: r[lane].byteLength } }) : null;
        return [r.id, ...LANES.map(at)];
      });
      this.sql.exec(
        `INSERT OR REPLACE INTO outbox_flushed (id, ${LANES.join(", ")})
         SELECT json_extract(value, '$[0]'), ${LANES.map((_, i) => `json_extract(value, '$[${i + 1}]')`).join(", ")} FROM json_each(?)`,
        JSON.stringify(landed),
      );
      this.sql.exec("DELETE FROM outbox WHERE id BETWEEN ? AND ?", plan.first, plan.last);
      this.sql.exec("DELETE FROM flushes WHERE first = ?", plan.first);
    });
    return rows.length;
  }

  /** The planned flush, or a new plan over the oldest entries up to FLUSH_MAX_BYTES (at least one). */
  private plan(): { first: number; last: number } | null {
    const planned = this.sql.exec<{ first: number; last: number }>("SELECT first, last FROM flushes ORDER BY first LIMIT 1").toArray()[0];
    if (planned) return planned;
    const entries = this.sql
      .exec<{ id: number; size: number }>(`SELECT id, ${laneBytes} AS size FROM outbox ORDER BY id LIMIT 10000`)
      .toArray();
    if (entries.length === 0) return null;
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
}

/** SQLite stores ArrayBuffers as BLOBs: exactly the view's bytes. */
const blob = (u: Uint8Array): ArrayBuffer => u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;

import { batchKey } from "../stream/batch-key";
import type { BatchRow, BegunRecord } from "./ledger-records";

/**
 * The ledger's begin records (`begun`, LEDGER_MIGRATION): micro-batches that
 * began and did not commit, with what each member is judged by, for its
 * retry. Kept only for attempts that failed, or that a restarted Coordinator
 * found begun. Their count is held, so that a lookup reads them only when
 * there are any.
 */
export class BegunRecords {
  private rows: number | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** A batch id's begin record (none held: no statement). */
  find(source: string, batchId: string): BatchRow | undefined {
    if (this.count() === 0) return undefined;
    return this.sql
      .exec<BatchRow>(
        `SELECT json_extract(m.value, '$[2]') AS body_hash, json_extract(m.value, '$[3]') AS watermark, json_extract(m.value, '$[4]') AS begun_at,
           json_extract(m.value, '$[5]') AS config_version, NULL AS seq, NULL AS report, g.id AS begun
         FROM begun g, json_each(g.members) m WHERE json_extract(m.value, '$[0]') = ?1 AND json_extract(m.value, '$[1]') = ?2`,
        source,
        batchId,
      )
      .toArray()[0];
  }

  add(id: string, members: readonly BegunRecord[], at: number): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO begun (id, at, members) VALUES (?, ?, ?)",
      id,
      at,
      JSON.stringify(members.map((m) => [m.source, m.batchId, m.identity, m.watermark, m.begunAt, m.configVersion])),
    );
    // Ids are new (a group's is random, a batch's own begins once), so the count goes up by one.
    if (this.rows !== undefined) this.rows++;
  }

  /** The begin record of a group that committed goes; older ones (attempts that failed) lose the members committed now. */
  drop(begun: string | null, committed: readonly { source: string; batchId: string }[]): void {
    if (this.count() === 0) return;
    if (begun !== null) this.rows! -= this.sql.exec("DELETE FROM begun WHERE id = ? RETURNING 1", begun).toArray().length;
    if (this.count() > 0) {
      // Attempts that failed before: rare, so the scan of the records left is too.
      const member = "json_extract(m.value, '$[0]') || char(10) || json_extract(m.value, '$[1]') IN (SELECT value FROM json_each(?1))";
      this.sql.exec(
        `UPDATE begun SET members = (SELECT json_group_array(json(m.value)) FROM json_each(begun.members) m WHERE NOT ${member})
         WHERE EXISTS (SELECT 1 FROM json_each(begun.members) m WHERE ${member})`,
        JSON.stringify(committed.map((m) => batchKey(m.source, m.batchId))),
      );
      this.sql.exec("DELETE FROM begun WHERE json_array_length(members) = 0");
      this.rows = undefined;
    }
  }

  /** Drops begin records older than `before` (their partitions' decisions are gone by then). */
  prune(before: number): void {
    if (this.count() === 0) return;
    this.sql.exec("DELETE FROM begun WHERE at < ?", before);
    this.rows = undefined;
  }

  /** The count is read again when next needed. */
  forget(): void {
    this.rows = undefined;
  }

  private count(): number {
    this.rows ??= this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM begun").one().n;
    return this.rows;
  }
}

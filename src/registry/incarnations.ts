/**
 * How many times each stream name has been created. A stream's Coordinator
 * forgets everything when the stream is deleted, so the count lives here,
 * where names outlive their streams: a re-created stream takes the next
 * number, and its webhook-ids carry it (src/delivery/message.ts), so that no
 * id is ever given to another row. Never decreases; numbers are never reused
 * (a creation that lost a race leaves a gap, which is harmless). The table is
 * made when first needed, as a partition's keys.r is: a Registry that never
 * saw a creation since keeps the layout it had.
 */
const INCARNATIONS_TABLE = "CREATE TABLE IF NOT EXISTS incarnations (name TEXT PRIMARY KEY, last INTEGER NOT NULL) WITHOUT ROWID";

export class Incarnations {
  private made = false;

  constructor(private readonly sql: SqlStorage) {}

  /** The number for a creation of `name` now: one more than any it had (1 for a new name). */
  claim(name: string): number {
    const n = this.last(name) + 1;
    this.sql.exec("INSERT OR REPLACE INTO incarnations (name, last) VALUES (?, ?)", name, n);
    return n;
  }

  /** A deleted stream had number `n` (a stream created before numbers were kept had 1): the next creation takes a higher one. */
  retire(name: string, n: number): void {
    if (n > this.last(name)) this.sql.exec("INSERT OR REPLACE INTO incarnations (name, last) VALUES (?, ?)", name, n);
  }

  private last(name: string): number {
    if (!this.made) this.sql.exec(INCARNATIONS_TABLE);
    this.made = true;
    return this.sql.exec<{ last: number }>("SELECT last FROM incarnations WHERE name = ?", name).toArray()[0]?.last ?? 0;
  }
}

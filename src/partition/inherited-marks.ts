/**
 * The keys a new partition took by read-through during an online rescale
 * (DESIGN §12) that their old partition may still hold: such a key is in
 * both until the move hands it out, so the stream's state figure leaves it
 * out here while the old partition still counts it (the old partition's own
 * figure leaves out what it has handed out: handedOutOf in ./key-moves.ts).
 * A row a key read through (a duplicate of a key not moved yet), written in
 * the call's transaction; all cleared when the rescale ends.
 */
import { isHandedOut } from "../stream/handed-out";
import type { MovedKey, OldHolder } from "./protocol";

export const INHERITED_TABLE =
  "CREATE TABLE IF NOT EXISTS inherited (p INTEGER NOT NULL, k TEXT NOT NULL, b INTEGER NOT NULL, e INTEGER, PRIMARY KEY (p, k)) WITHOUT ROWID";

/** Rows an INSERT carries (4 bound values each: a statement takes at most 100). */
const ROWS_PER_INSERT = 25;

export class InheritedMarks {
  /** whether the table holds a row (unknown: read it): a partition that never read through asks nothing */
  private any: boolean | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** These keys, kept here by read-through from the old partition each names (`from`, `bucket`). */
  mark(kept: readonly MovedKey[]): void {
    const rows = kept.filter((m) => m.from !== undefined && m.bucket !== undefined);
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT);
      this.sql.exec(
        `INSERT OR REPLACE INTO inherited (p, k, b, e) VALUES ${chunk.map(() => "(?, ?, ?, ?)").join(", ")}`,
        ...chunk.flatMap((m) => [m.from!, m.key, m.bucket!, m.expiresAt]),
      );
    }
    if (rows.length > 0) this.any = true;
  }

  /**
   * How many keys read through are still counted by their old partition:
   * alive here (at `watermark`) and there (at its own), not handed out yet.
   */
  stillHeldElsewhere(olds: Readonly<Record<number, OldHolder>>, watermark: number): number {
    if (this.any === false) return 0;
    const rows = this.sql.exec<{ p: number; k: string; b: number; e: number | null }>("SELECT p, k, b, e FROM inherited").toArray();
    this.any = rows.length > 0;
    const alive = (e: number | null, wm: number) => e === null || e > wm;
    return rows.filter((r) => {
      const old = olds[r.p];
      return old !== undefined && alive(r.e, watermark) && alive(r.e, old.watermark) && !isHandedOut(old, r.b, r.k);
    }).length;
  }

  /** The rescale is over: no old partition holds anything. */
  clear(): void {
    if (this.any === false) return;
    this.sql.exec("DELETE FROM inherited");
    this.any = false;
  }

  /** Read again next time (after a rollback or a new incarnation). */
  forget(): void {
    this.any = undefined;
  }
}

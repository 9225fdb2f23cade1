/**
 * How an outbox flush's commit records become `groups` rows
 * (src/output/outbox.ts): one row per run of consecutive commit numbers,
 * each listing its groups, and no row over GROUPS_ROW_MAX_BYTES. Pure.
 */

/** An outbox row's commit record columns (null: an entry from before migration 9, whose record is in `groups`). */
export type GroupColumns = { seq: number | null; first_seq: number | null; committed_at: number | null; max_t: number | null; members: string | null };
export type GroupRow = { seq: number; first_seq: number; committed_at: number; max_t: number | null; members: string };

/** A `groups` row a flush writes holds at most this much of its groups' members (SQLite caps a row at 2 MB; each member carries its record). */
const GROUPS_ROW_MAX_BYTES = 1024 * 1024;

/** The commit records of a chunk's rows, in runs of consecutive commit numbers, each small enough for one row. */
export function runsOf(rows: readonly GroupColumns[]): GroupRow[][] {
  const runs: GroupRow[][] = [];
  let bytes = 0;
  for (const r of rows) {
    if (r.members === null || r.seq === null || r.first_seq === null || r.committed_at === null) continue;
    const g = r as GroupRow;
    const run = runs[runs.length - 1];
    if (run && run[run.length - 1].seq + 1 === g.first_seq && bytes + g.members.length <= GROUPS_ROW_MAX_BYTES) run.push(g);
    else runs.push([g]), (bytes = 0);
    bytes += g.members.length;
  }
  return runs;
}

import { describe, expect, test } from "vitest";
import { runsOf, type GroupColumns } from "../../../src/output/commit-runs";

/** A commit record of commit numbers first…last whose members take `bytes`. */
const group = (first: number, last: number, bytes = 10): GroupColumns => ({
  seq: last,
  first_seq: first,
  committed_at: first,
  max_t: null,
  members: "x".repeat(bytes),
});
const spans = (runs: { first_seq: number; seq: number }[][]) => runs.map((r) => [r[0].first_seq, r[r.length - 1].seq]);

describe("a flush's commit records become groups rows (src/output/commit-runs.ts)", () => {
  test("one row per run of consecutive commit numbers; entries from before the records rode along are skipped", () => {
    const rows = [group(1, 2), group(3, 3), { ...group(4, 4), members: null, seq: null }, group(6, 7), group(8, 8)];
    expect(spans(runsOf(rows))).toEqual([
      [1, 3],
      [6, 8],
    ]);
  });

  test("a run whose members would pass 1 MiB starts a new row (SQLite caps a row at 2 MB), and no group is lost or split", () => {
    const big = 400 * 1024;
    const rows = [group(1, 1, big), group(2, 5, big), group(6, 6, big), group(7, 7, 10), group(8, 9, 2 * 1024 * 1024)];
    const runs = runsOf(rows);
    expect(spans(runs)).toEqual([
      [1, 5],
      [6, 7],
      [8, 9],
    ]);
    for (const r of runs.slice(0, 2)) expect(r.reduce((n, g) => n + g.members.length, 0)).toBeLessThanOrEqual(1024 * 1024);
    expect(runs.flat()).toHaveLength(rows.length);
  });
});

import type { Lane, LaneKeys } from "../output/sink";
import type { Outbox } from "../output/outbox";

/** The lanes of DESIGN §11, indexed here rather than in the batch ledger's row: most batches have none. */
export const SAME_EVENT_LANES = ["conflicts", "duplicates"] as const satisfies readonly Lane[];
export type SameEventLane = (typeof SAME_EVENT_LANES)[number];

export const isSameEventLane = (lane: Lane): lane is SameEventLane => (SAME_EVENT_LANES as readonly Lane[]).includes(lane);

/** Created by a Coordinator migration: a committed batch's reference per lane it wrote to. */
export const LANE_REFS_TABLE =
  "CREATE TABLE IF NOT EXISTS lane_refs (seq INTEGER NOT NULL, lane TEXT NOT NULL, ref TEXT NOT NULL, PRIMARY KEY (lane, seq)) WITHOUT ROWID;";

/**
 * The commit index of the conflicts and duplicates lanes: one row per
 * committed batch and lane it wrote to, written in the commit's transaction
 * (so a retried batch, answered from the ledger, never adds one), read in
 * commit order as the ledger's own lanes are, and forgotten with the
 * ledger's commits (prune).
 */
export class LaneRefs {
  constructor(
    private readonly sql: SqlStorage,
    private readonly outbox: Outbox,
  ) {}

  /** Records commit `seq`'s references (inside the commit's transaction). */
  record(seq: number, objects: LaneKeys): void {
    for (const lane of SAME_EVENT_LANES) {
      const ref = objects[lane];
      if (ref) this.sql.exec("INSERT INTO lane_refs (seq, lane, ref) VALUES (?, ?, ?)", seq, lane, ref);
    }
  }

  /** Forgets the references of commits up to `upTo` (with the ledger's, past the idempotency window: src/coordinator/window.ts). */
  prune(upTo: number): void {
    this.sql.exec("DELETE FROM lane_refs WHERE lane IN ('conflicts', 'duplicates') AND seq <= ?", upTo);
  }

  /** Committed batches that wrote to `lane`, in commit order, after `afterSeq` up to `upToSeq`. */
  commits(lane: SameEventLane, afterSeq: number, upToSeq: number, limit: number): ({ seq: number } & ({ ref: string } | { bytes: Uint8Array }))[] {
    const rows = this.sql
      .exec<{ seq: number; ref: string }>(
        "SELECT seq, ref FROM lane_refs WHERE lane = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
        lane,
        afterSeq,
        upToSeq,
        limit,
      )
      .toArray();
    const resolved = this.outbox.resolve(rows.map((r) => r.ref));
    return rows.map((r, i) => ({ seq: r.seq, ...resolved[i] }));
  }
}

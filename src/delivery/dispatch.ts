/**
 * Which due rows go out now, and on which lane: pure, over the rows the
 * sender found due (in commit order, at most one per entity: the entity's
 * oldest pending row, ./pending.ts). A row already in flight stays out, an
 * entity in flight sends nothing more, a lane takes at most `perLane` rows
 * and only when it has nothing in flight, and no more than `room` rows start
 * (maxPerSecond's room, ./rate-cap.ts).
 */
export interface Candidate {
  seq: number;
  idx: number;
  entity: string | null;
  h: number;
}

export interface InFlight {
  /** `${seq}.${idx}` of the rows in flight */
  rows: ReadonlySet<string>;
  entities: ReadonlySet<string>;
  lanes: ReadonlySet<number>;
}

export const rowKey = (r: { seq: number; idx: number }) => `${r.seq}.${r.idx}`;

export function planDispatch<R extends Candidate>(due: readonly R[], inFlight: InFlight, lanes: number, perLane: number, room: number): Map<number, R[]> {
  const plan = new Map<number, R[]>();
  let taken = 0;
  for (const r of due) {
    if (taken >= room) break;
    if (inFlight.rows.has(rowKey(r))) continue;
    if (r.entity !== null && inFlight.entities.has(r.entity)) continue;
    const lane = r.h % lanes;
    if (inFlight.lanes.has(lane)) continue;
    const chunk = plan.get(lane) ?? [];
    if (chunk.length >= perLane) continue;
    chunk.push(r);
    plan.set(lane, chunk);
    taken++;
  }
  return plan;
}

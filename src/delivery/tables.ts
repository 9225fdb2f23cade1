import { DeadLane } from "./dead-lane";
import { CommitMarks } from "./marks";
import { Members } from "./members";
import { Pending } from "./pending";
import { RecentDeliveries } from "./recent";
import { DestinationRecord } from "./record";

/** The Destination's tables (./store.ts), each behind its module. */
export interface DestinationTables {
  record: DestinationRecord;
  pending: Pending;
  dead: DeadLane;
  marks: CommitMarks;
  members: Members;
  recent: RecentDeliveries;
  /** the stream started over: its pending rows, commit marks and recent attempts go (./store.ts) */
  forgetEpoch(): void;
}

/** The stream started over (a new epoch): the rows read ahead of it and the commit marks it reported go. */
function forgetEpoch(sql: SqlStorage): void {
  sql.exec("DELETE FROM pending; DELETE FROM marks; DELETE FROM recent;");
}

export function destinationTables(sql: SqlStorage): DestinationTables {
  return {
    record: new DestinationRecord(sql),
    pending: new Pending(sql),
    dead: new DeadLane(sql),
    marks: new CommitMarks(sql),
    members: new Members(sql),
    recent: new RecentDeliveries(sql),
    forgetEpoch: () => forgetEpoch(sql),
  };
}

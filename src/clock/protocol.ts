import type { StreamConfig } from "../stream/config";
import type { ClockAnswer, ClockReading, ClockReport, ShardNow } from "./report";

export * from "./report";

export interface ClockRpc extends Rpc.DurableObjectBranded {
  exchange(report: ClockReport): Promise<ClockAnswer>;
  /** The stream's config changed (or it was created): the clock judges by it from now on. */
  configure(stream: string, at: { epoch: string; incarnation: number }, configVersion: number, config: StreamConfig): void;
  /** The clock's figures; `fresh`: every shard's as the reader gathered them (the clock takes them in and tells the shards behind). */
  read(epoch: string, fresh?: ShardNow[]): ClockReading | null;
  /** The stream was deleted. */
  drop(): void;
}

import { shardsOf } from "./shards";
import { own } from "../lib/own";
import { isTimestampType, type StreamConfig } from "./config";

/**
 * Fields bound at creation, like a Spark checkpoint's plan: changing them would
 * reinterpret state already stored. How each key column is encoded into the
 * canonical key is bound too (its schema type, a time's unit).
 */
export function boundFieldChanges(old: StreamConfig, next: StreamConfig): string[] {
  const changed: string[] = [];
  if (JSON.stringify(old.key) !== JSON.stringify(next.key) || JSON.stringify(old.contentKey ?? null) !== JSON.stringify(next.contentKey ?? null))
    changed.push("key");
  if (old.mode !== next.mode) changed.push("mode");
  if (old.eventTime !== next.eventTime) changed.push("eventTime");
  if (old.partitions !== next.partitions) changed.push("partitions");
  if (shardsOf(old) !== shardsOf(next)) changed.push("shards");
  if ((old.stateKeys ?? "text") !== (next.stateKeys ?? "text")) changed.push("stateKeys");
  // The kept copies' digests in state were taken without these fields.
  if (JSON.stringify(old.volatile ?? []) !== JSON.stringify(next.volatile ?? [])) changed.push("volatile");
  for (const col of old.key) {
    if (keyEncoding(old, col) !== keyEncoding(next, col)) changed.push(`schema.${col}`);
  }
  return changed;
}

/**
 * How a key column's value enters the canonical key. A time is keyed by its
 * instant in ms; "timestamp" and "timestamp:ms" read every value they both
 * accept alike (the former only refuses implausibly small numbers), so moving
 * between them keeps stored keys valid, while "timestamp:s" reads 1700000000 as
 * another instant. The event-time column's unit is bound only when it is a key
 * column: elsewhere state holds ms already read, and switching a stream to
 * "timestamp:s" is the fix the plausibility rule's message suggests.
 */
function keyEncoding(config: StreamConfig, column: string): string {
  const type = own(config.schema, column);
  if (column === config.eventTime || isTimestampType(type)) return type === "timestamp:s" ? "instant in s" : "instant in ms";
  return type ?? "as sent";
}

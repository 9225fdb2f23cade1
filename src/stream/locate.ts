import type { StreamConfig } from "./config";
import { contentExcludeFor } from "./volatile-fields";
import { stateKeyFor } from "./dedup";
import { dedupSettings } from "./batch";
import { partitionFor } from "./partition-for";
import { parseJson } from "../lib/json";
import { own } from "../lib/own";
import { rowValueFault } from "./row-values";
import { isRejected, rowJudge, type Row } from "./schema";

/**
 * The state reader's ?row= (GET /v1/streams/{stream}/state): where a row's
 * key lives, keyed and routed as ingest keys and routes it, or why it has no
 * key. Only what the state key is made of is judged: an id key's columns (and
 * the event time in mode event-time-key), or a content key's whole row. The
 * rest of the row is not read, so a field ingest would refuse (a time too far
 * ahead, a number too large) does not hide a key that is remembered. Pure.
 */
/** A row's state key, its partition, and the key it is routed by (its canonical key). */
export type Located = { stateKey: string; partition: number; routingKey: string } | { error: string };

export function locateRow(config: StreamConfig, text: string, now: number, batchId?: string): Located {
  const parsed = parseJson(text);
  if (!parsed.ok) return { error: `row ${parsed.error}` };
  const raw = parsed.value;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return { error: "row must be a JSON object: a row as ingest takes it, with its key columns (and its event time in mode event-time-key)" };
  }
  const probe = probeRow(config, raw as Row, now, batchId);
  if ("error" in probe) return probe;
  const judged = rowJudge(config, now, batchId === undefined ? undefined : { source: "default", watermark: 0, batchId })(probe.row, 0);
  if (isRejected(judged)) return { error: `row has no state key: ${judged.error}` };
  return { stateKey: stateKeyFor(dedupSettings(config), judged), partition: partitionFor(judged.key, config.partitions), routingKey: judged.key };
}

/** The part of the row the state key is made of, with an event time filled in where the key does not hold it. */
function probeRow(config: StreamConfig, raw: Row, now: number, batchId: string | undefined): { row: Row } | { error: string } {
  const eventTime = config.eventTime;
  const keyedByTime = config.mode === "event-time-key";
  if (keyedByTime && eventTime !== null && own(raw, eventTime) == null) {
    return { error: `row has no state key: ${eventTime}: missing event time; in mode event-time-key the state key is the key columns and the event time` };
  }
  const row: Row = Object.create(null);
  if (config.contentKey) {
    // A content key is the hash of the whole row: every field counts, as ingested.
    Object.assign(row, raw);
    // Which field is not said: the row's own field names may carry what a secret does.
    if (rowValueFault(row) !== null) return { error: "row has no state key: it holds a number that is not finite (such as 1e999), so its content has no key" };
  } else {
    for (const column of [...config.key, ...(keyedByTime && eventTime !== null ? [eventTime] : [])]) {
      const v = own(raw, column);
      if (v === undefined) continue; // rowJudge names a missing key column
      if (typeof v === "number" && !Number.isFinite(v)) return { error: `row has no state key: ${column}: a key value must be a finite number` };
      row[column] = v;
    }
  }
  // Where the state key holds no event time (modes within-watermark and global), any instant will do: ingest requires one.
  if (eventTime !== null && !keyedByTime && !heldByKey(config, eventTime, batchId)) row[eventTime] = new Date(now).toISOString();
  return { row };
}

/** Whether the event-time column's value is part of the key: a key column, or a field of a content key's row that it does not leave out. */
function heldByKey(config: StreamConfig, eventTime: string, batchId: string | undefined): boolean {
  if (!config.contentKey) return config.key.includes(eventTime);
  return !contentExcludeFor(config, batchId).includes(eventTime);
}

/**
 * A remembered key's receipt (GET …/state?row=…, DESIGN §11): where the kept
 * copy is and what was dropped against it. Pure: the partition's entry and
 * the Coordinator's commit number in, the answer out.
 */
import { dedupSettings, keptRefOf, type KeptRef } from "./batch";
import type { StreamConfig } from "./config";
import { firstEventTimeOf } from "./dedup";

export interface StoredReceipt {
  key: string;
  eventTime: number | null;
  expiresAt: number | null;
  /** `{source}\n{batchId}` of the kept copy; null: kept before receipts were recorded */
  batch: string | null;
  dropped: number;
  conflicts: number;
}

export interface Receipt {
  key: string;
  eventTime: number | null;
  expiresAt: number | null;
  /** the kept copy: its batch, commit number (null: not committed, or no longer in the ledger) and event time */
  kept: (KeptRef & { eventTime: number | null }) | null;
  /** copies dropped against it (duplicates and dropped conflicts) */
  dropped: number;
  /** copies whose content differed from it (dropped or rejected) */
  conflicts: number;
}

export function receiptOf(config: StreamConfig, entry: StoredReceipt, seqOf: (source: string, batchId: string) => number | null): Receipt {
  // Compact state keeps no event time where the expiry implies it.
  const eventTime = entry.eventTime ?? firstEventTimeOf(dedupSettings(config), entry.expiresAt);
  return {
    key: entry.key,
    eventTime: entry.eventTime,
    expiresAt: entry.expiresAt,
    kept: entry.batch === null ? null : { ...keptRefOf(entry.batch, seqOf), eventTime },
    dropped: entry.dropped,
    conflicts: entry.conflicts,
  };
}

import type { Mode } from "./config";
import { digestWord } from "./content";
import { stateKeyOf } from "./key";

/** What the dedup step needs of the stream's config. */
export interface DedupSettings {
  mode: Mode;
  /** ms, the stream's watermark delay (within-watermark expiry) */
  delay: number;
  /** false only in `global` mode without an event-time column */
  hasEventTime: boolean;
  /** partitions store 64-bit key hashes instead of key text (compact state) */
  hashedKeys?: boolean;
  /** a conflicting copy is rejected (x) instead of dropped (c) */
  onConflict?: "reject";
  /** the kept copy's batch is wanted for every dropped copy (the duplicates lane), not only for conflicts */
  keepDuplicates?: boolean;
}

export interface DedupInput {
  key: string;
  eventTime: number | null;
  /** the row's content digest (src/stream/content.ts), for an id-keyed stream; absent: never a conflict */
  digest?: string;
}

/**
 * e = emitted, d = duplicate, l = late; c = a conflict, dropped (a duplicate
 * whose content differs from the kept copy's), x = a conflict, rejected. One
 * character per row, in order.
 */
export type Decision = "e" | "d" | "l" | "c" | "x";

/** Whether a copy of a kept row is a plain duplicate or a conflict: both digests known, and different in the 32 bits a partition keeps (digestWord). */
export function dropVerdict(settings: DedupSettings, digest: string | undefined, kept: string | null | undefined): "d" | "c" | "x" {
  if (digest === undefined || kept === null || kept === undefined || digest === kept || digestWord(digest) === digestWord(kept)) return "d";
  return settings.onConflict === "reject" ? "x" : "c";
}

export interface StateInsert {
  stateKey: string;
  eventTime: number | null;
  digest?: string;
  /** epoch ms at which the key may be forgotten (evicted when wm >= expiresAt); null = never */
  expiresAt: number | null;
}

/** When a key emitted at `eventTime` may be forgotten (DESIGN §2.5). */
export function expiryOf(settings: DedupSettings, eventTime: number | null): number | null {
  if (eventTime === null) return null;
  switch (settings.mode) {
    case "within-watermark":
      return eventTime + settings.delay;
    case "event-time-key":
      return eventTime;
    case "global":
      return null;
  }
}

/** The kept copy's event time from its expiry, where the mode makes one imply the other (compact state stores only the expiry). */
export function firstEventTimeOf(settings: DedupSettings, expiresAt: number | null): number | null {
  if (expiresAt === null) return null;
  return settings.mode === "within-watermark" ? expiresAt - settings.delay : settings.mode === "event-time-key" ? expiresAt : null;
}

export function isExpired(expiresAt: number | null, watermark: number): boolean {
  return expiresAt !== null && expiresAt <= watermark;
}

export function stateKeyFor(settings: DedupSettings, row: DedupInput): string {
  return stateKeyOf(row.key, row.eventTime, settings.mode === "event-time-key");
}

/**
 * The dedup step for one partition's sub-batch. `watermark` is already
 * max(partition wm, batch wm) and `remembered` holds the state keys that are
 * present after evicting at that watermark. Late rows are dropped before the
 * dedup check; the first copy in processing order survives.
 */
export function applyBatch(
  settings: DedupSettings,
  watermark: number,
  rows: readonly DedupInput[],
  remembered: (stateKey: string) => boolean,
  /** the kept copy's digest of a remembered key (null: none kept, e.g. state from before digests) */
  keptDigest: (stateKey: string) => string | null = () => null,
  /** what state tells keys apart by (hashed state: the 64-bit hash, so two keys of one hash are one key, as stored) */
  identity: (stateKey: string) => string = (k) => k,
): { decisions: Decision[]; inserts: StateInsert[] } {
  const decisions: Decision[] = [];
  const inserts: StateInsert[] = [];
  const seen = new Map<string, string | null>();
  for (const row of rows) {
    if (settings.hasEventTime && row.eventTime !== null && row.eventTime <= watermark) {
      decisions.push("l");
      continue;
    }
    const stateKey = stateKeyFor(settings, row);
    const id = identity(stateKey);
    if (seen.has(id) || remembered(stateKey)) {
      decisions.push(dropVerdict(settings, row.digest, seen.has(id) ? seen.get(id) : keptDigest(stateKey)));
      continue;
    }
    seen.set(id, row.digest ?? null);
    decisions.push("e");
    inserts.push({
      stateKey,
      eventTime: row.eventTime,
      expiresAt: expiryOf(settings, row.eventTime),
      ...(row.digest === undefined ? {} : { digest: row.digest }),
    });
  }
  return { decisions, inserts };
}

/**
 * Rows of a history → the events the advisor measures: a canonical key (as the
 * service encodes it), an event time in epoch ms and a source. Rows without a
 * usable key or event time are counted and skipped, never guessed at.
 */
import { encodeKey, type KeyValue } from "../key.ts";
import { MIN_PLAUSIBLE_MS, parseTimestamp, type TimeUnit } from "../timestamp.ts";

export interface HistoryEvent {
  key: string;
  /** epoch ms */
  time: number;
  source: string;
}

export interface HistoryColumns {
  key: readonly string[];
  time: string;
  /** the column naming each row's source; without it every row is from "default" */
  source?: string;
  /** what a bare number in the time column means (default ms) */
  unit?: TimeUnit;
}

export const DEFAULT_SOURCE = "default";

/** What was skipped or looked wrong while reading a history. */
export class HistoryNotes {
  skipped = 0;
  /** the first few reasons, "row 12: id: missing key column" */
  readonly examples: string[] = [];
  /** numeric times read as ms that are below 2001-09-09: probably epoch seconds */
  implausibleMs = 0;

  skip(where: string, reason: string): void {
    this.skipped++;
    if (this.examples.length < 5) this.examples.push(`${where}: ${reason}`);
  }
}

const own = (row: Record<string, unknown>, column: string): unknown => (Object.hasOwn(row, column) ? row[column] : undefined);

/**
 * One row → an event, or a reason it cannot be one. `row` is any parsed JSON value.
 */
export function eventOf(row: unknown, columns: HistoryColumns): HistoryEvent | string {
  if (row === null || typeof row !== "object" || Array.isArray(row)) return "not a JSON object";
  const r = row as Record<string, unknown>;
  const unit = columns.unit ?? "ms";
  const raw = own(r, columns.time);
  if (raw === undefined || raw === null) return `${columns.time}: missing event time`;
  const time = parseTimestamp(raw, unit);
  if (time === null) return `${columns.time}: not a timestamp (ISO-8601 or epoch ${unit === "s" ? "seconds" : "ms"})`;
  const values: KeyValue[] = [];
  for (const column of columns.key) {
    const v = own(r, column);
    if (v === undefined || v === null) return `${column}: missing key column`;
    if (typeof v === "object" || (typeof v === "number" && !Number.isFinite(v))) return `${column}: a key value must be a string, finite number or boolean`;
    // As the service does: the event time in the key is compared as an instant.
    values.push(column === columns.time ? time : (v as KeyValue));
  }
  let source = DEFAULT_SOURCE;
  if (columns.source !== undefined) {
    const s = own(r, columns.source);
    if (s !== undefined && s !== null && s !== "") source = String(s);
  }
  return { key: encodeKey(values), time, source };
}

/** Rows → events, skipping (and noting) the rows that are not. `where(i)` names row i in notes. */
export function* eventsOf(
  rows: Iterable<unknown>,
  columns: HistoryColumns,
  notes: HistoryNotes = new HistoryNotes(),
  where: (index: number) => string = (i) => `row ${i + 1}`,
): Generator<HistoryEvent> {
  let i = 0;
  for (const row of rows) {
    const e = eventOf(row, columns);
    if (typeof e === "string") notes.skip(where(i), e);
    else {
      if ((columns.unit ?? "ms") === "ms" && e.time < MIN_PLAUSIBLE_MS && isBareNumber(own(row as Record<string, unknown>, columns.time)))
        notes.implausibleMs++;
      yield e;
    }
    i++;
  }
}

const isBareNumber = (v: unknown) => typeof v === "number" || (typeof v === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(v));

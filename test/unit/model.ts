/**
 * A naive reference model of one stream, written from DESIGN.md §2 and §11
 * alone. It imports nothing from src/ (SHA-256 is node:crypto's): its validation, key encoding, watermark and dedup
 * are its own, kept as plain as possible (one Map of remembered keys, eviction
 * by scanning it) so that it is obviously right rather than fast.
 *
 * Validation covers only the row shapes the property tests generate: objects
 * whose key columns are strings, numbers or booleans (optionally typed "string"
 * or "int"), event times as epoch ms or `Date#toISOString` strings.
 */

import { createHash } from "node:crypto";

export type ModelMode = "within-watermark" | "event-time-key" | "global";
/** e(mitted), d(uplicate), l(ate), r(ejected); c: a conflict dropped, x: a conflict rejected (DESIGN §11) */
export type ModelDecision = "e" | "d" | "l" | "r" | "c" | "x";

export interface ModelSpec {
  mode: ModelMode;
  /** the event-time column, or null (global mode only) */
  eventTime: string | null;
  keyColumns: string[];
  /** coercions of typed columns */
  types: Record<string, "string" | "int">;
  /** the stream's watermark delay, ms */
  delay: number;
  policy: "min" | "max";
  /** declared sources → their own delay (undefined: the stream's) */
  declared: Record<string, number | undefined>;
  /** the clock for the skew guard, and the guard itself (ms) */
  now: number;
  maxSkew: number;
  /** a content key: the row without these fields is its key (null: the key columns) */
  contentExclude?: string[] | null;
  /** fields that may differ between copies without a conflict */
  volatile?: string[];
  onConflict?: "drop" | "reject";
}

/**
 * The row without the named fields (top-level or dotted), as RFC 8785 text,
 * written out plainly: members sorted by name, every value as JSON.stringify
 * writes it (which is what the RFC asks of parsed JSON).
 */
export function modelContent(row: Record<string, unknown>, without: readonly string[]): string {
  const text = (v: unknown, path: string | null): string => {
    if (v === null || typeof v !== "object") return JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map((x) => text(x, null)).join(",")}]`;
    const members: string[] = [];
    for (const k of Object.keys(v).sort()) {
      const here = path === null ? null : path === "" ? k : `${path}.${k}`;
      if (here === null || !without.includes(here)) members.push(`${JSON.stringify(k)}:${text((v as Record<string, unknown>)[k], here)}`);
    }
    return `{${members.join(",")}}`;
  };
  return text(row, "");
}

export interface ModelRow {
  index: number;
  /** the row after coercion, as it would be output */
  row: Record<string, unknown>;
  /** canonical key: JSON array of the key columns' values */
  key: string;
  /** event time, ms (null without an event-time column) */
  t: number | null;
}

export interface ModelBatch {
  /** the watermark the batch was judged by */
  watermark: number;
  watermarkAfter: number;
  /** one per input row */
  decisions: ModelDecision[];
  emitted: Record<string, unknown>[];
}

interface Remembered {
  /** the kept copy's content without the volatile fields */
  content: string;
  tFirst: number | null;
  expiresAt: number | null;
  /** which state partition holds it (0 when partitions play no part) */
  scope: number;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?Z$/;

function modelTime(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? Math.trunc(v) : null;
  if (typeof v !== "string") return null;
  if (/^-?\d+$/.test(v)) return Number(v);
  const m = ISO.exec(v);
  if (!m) return null;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], m[7] === undefined ? 0 : +m[7]);
}

function coerce(type: "string" | "int", v: unknown): { ok: true; value: unknown } | { ok: false } {
  if (type === "string") {
    if (typeof v === "string") return { ok: true, value: v };
    if (typeof v === "number" || typeof v === "boolean") return { ok: true, value: String(v) };
    return { ok: false };
  }
  let n: unknown = v;
  if (typeof v === "string" && /^-?\d+$/.test(v.trim())) n = Number(v);
  if (typeof n !== "number" || !Number.isInteger(n) || n < -(2 ** 31) || n > 2 ** 31 - 1) return { ok: false };
  return { ok: true, value: n };
}

export class ReferenceModel {
  /** the global watermark: starts at 0, never decreases */
  watermark = 0;
  /** per source: max event time of its accepted rows */
  readonly maxT = new Map<string, number>();
  /** state key → what is remembered */
  readonly state = new Map<string, Remembered>();
  /** per state partition: the highest watermark it has been given */
  private readonly scopeWatermark = new Map<number, number>();

  constructor(readonly spec: ModelSpec) {}

  /** null: the row is rejected */
  validate(raw: unknown, index: number): ModelRow | null {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return null;
    const row: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
    for (const [col, type] of Object.entries(this.spec.types)) {
      if (row[col] === undefined || row[col] === null) continue;
      const c = coerce(type, row[col]);
      if (!c.ok) return null;
      row[col] = c.value;
    }
    const values: unknown[] = [];
    for (const col of this.spec.contentExclude ? [] : this.spec.keyColumns) {
      const v = row[col];
      if (v === undefined || v === null || typeof v === "object") return null;
      if (col === this.spec.eventTime) {
        // a time in the key is an instant: its ISO and epoch-ms spellings are one key
        const t = modelTime(v);
        if (t === null) return null;
        values.push(t);
      } else values.push(v);
    }
    // a content key: the SHA-256 of the row's canonical text without the excluded fields, as a one-value key
    const key = this.spec.contentExclude
      ? JSON.stringify([createHash("sha256").update(modelContent(row, this.spec.contentExclude)).digest("hex")])
      : JSON.stringify(values);
    if (new TextEncoder().encode(key).length > 1024) return null;
    let t: number | null = null;
    if (this.spec.eventTime !== null) {
      const v = row[this.spec.eventTime];
      if (v === undefined || v === null) return null;
      t = modelTime(v);
      if (t === null || t > this.spec.now + this.spec.maxSkew) return null;
    }
    return { index, row, key, t };
  }

  stateKeyOf(r: { key: string; t: number | null }): string {
    return this.spec.mode === "event-time-key" ? `${r.key}@${r.t}` : r.key;
  }

  /** When a key first emitted at `t` is forgotten (DESIGN §2.5). */
  expiryOf(t: number | null): number | null {
    if (t === null) return null;
    if (this.spec.mode === "within-watermark") return t + this.spec.delay;
    if (this.spec.mode === "event-time-key") return t;
    return null;
  }

  delayOf(source: string): number {
    return this.spec.declared[source] ?? this.spec.delay;
  }

  /** Raises a state partition's watermark (never lowers it) and forgets what expired. */
  advance(scope: number, watermark: number): number {
    const wm = Math.max(this.scopeWatermark.get(scope) ?? 0, watermark);
    this.scopeWatermark.set(scope, wm);
    for (const [k, e] of [...this.state]) {
      if (e.scope === scope && e.expiresAt !== null && wm >= e.expiresAt) this.state.delete(k);
    }
    return wm;
  }

  /**
   * Judges accepted rows of one batch, in processing order, in one state
   * partition, for a batch that began under `batchWatermark`.
   */
  judge(rows: readonly ModelRow[], batchWatermark: number, scope = 0): ModelDecision[] {
    const wm = this.advance(scope, batchWatermark);
    return rows.map((r): ModelDecision => {
      if (this.spec.eventTime !== null && r.t! <= wm) return "l";
      const k = this.stateKeyOf(r);
      // The event-time column is never content (src/stream/content.ts conflictBlindFields).
      const content = modelContent(r.row, [...(this.spec.volatile ?? []), ...(this.spec.eventTime ? [this.spec.eventTime] : [])]);
      const kept = this.state.get(k);
      if (kept) return this.spec.contentExclude || kept.content === content ? "d" : this.spec.onConflict === "reject" ? "x" : "c";
      this.state.set(k, { content, tFirst: r.t, expiresAt: this.expiryOf(r.t), scope });
      return "e";
    });
  }

  /** A batch commits: its accepted rows (late and duplicate too) move its source's watermark. */
  commit(source: string, accepted: readonly ModelRow[]): number {
    for (const r of accepted) {
      if (r.t !== null) this.maxT.set(source, Math.max(this.maxT.get(source) ?? -Infinity, r.t));
    }
    if (this.spec.eventTime === null) return this.watermark;
    const names = new Set([...Object.keys(this.spec.declared), ...this.maxT.keys()]);
    if (names.size === 0) return this.watermark;
    const marks = [...names].map((s) => (this.maxT.has(s) ? this.maxT.get(s)! - this.delayOf(s) : 0));
    const candidate = this.spec.policy === "min" ? Math.min(...marks) : Math.max(...marks);
    this.watermark = Math.max(this.watermark, candidate);
    return this.watermark;
  }

  /** One batch, begun and committed before the next begins. */
  runBatch(source: string, rows: readonly unknown[]): ModelBatch {
    const watermark = this.watermark;
    const accepted = rows.map((raw, i) => this.validate(raw, i)).filter((r): r is ModelRow => r !== null);
    const judged = this.judge(accepted, watermark, 0);
    const decisions: ModelDecision[] = rows.map(() => "r");
    accepted.forEach((r, i) => (decisions[r.index] = judged[i]));
    // a rejected conflict is rejected: its event time does not count
    const watermarkAfter = this.commit(
      source,
      accepted.filter((_, i) => judged[i] !== "x"),
    );
    return { watermark, watermarkAfter, decisions, emitted: accepted.filter((_, i) => judged[i] === "e").map((r) => r.row) };
  }

  /** The remembered keys and their expiry, sorted. */
  stateEntries(): [string, number | null][] {
    return [...this.state].map(([k, e]): [string, number | null] => [k, e.expiresAt]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
}

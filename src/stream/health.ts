/**
 * A stream's health, from what the coordinator already keeps: the source
 * watermarks and the recent progress reports. Pure: no Cloudflare imports;
 * GET /v1/streams/{stream}/health is a thin adapter over evaluateHealth.
 */
import type { Mode } from "./config";
import type { ProgressReport } from "./batch-outcome";
import { partitionCapacity, type PartitionCapacity } from "./partition-capacity";

export type HealthStatus = "ok" | "warn" | "critical";

/** Every reason health may give (the API's schema takes them from here). */
export const HEALTH_REASON_CODES = [
  "watermark-stalled",
  "held-back",
  "state-rising",
  "late-rate",
  "rejected-rate",
  "table-failing",
  "conflict-rate",
  "unkeyed-key-hash",
  "webhook-refusals",
  "partition-capacity",
] as const;
export type HealthReasonCode = (typeof HEALTH_REASON_CODES)[number];

export interface HealthReason {
  code: HealthReasonCode;
  severity: Exclude<HealthStatus, "ok">;
  detail: string;
}

export interface HealthThresholds {
  /** the recent window: progress reports committed at most this long ago (ms) … */
  windowMs: number;
  /** … and at most this many of them */
  windowBatches: number;
  /** fewer commits than this in the window: too few to judge a stall, a rate or a trend */
  minBatches: number;
  /** fewer input rows than this in the window: too few to judge a rate */
  minRows: number;
  /** late / input at or above these is a warning / critical */
  lateWarn: number;
  lateCritical: number;
  /** rejected / input at or above these is a warning / critical */
  rejectedWarn: number;
  rejectedCritical: number;
  /** conflicts / input at or above this is a warning (a producer sending changed copies under one id) */
  conflictWarn?: number;
}

export const DEFAULT_THRESHOLDS: HealthThresholds = {
  windowMs: 15 * 60_000,
  windowBatches: 100,
  minBatches: 5,
  minRows: 20,
  lateWarn: 0.05,
  lateCritical: 0.5,
  rejectedWarn: 0.01,
  rejectedCritical: 0.25,
  conflictWarn: 0.01,
};

export interface HealthSource {
  watermark: number;
  lastBatchAt: number | null;
  /** counts toward the global watermark now: declared or has sent, not disabled, not idle */
  counted: boolean;
  idle: boolean;
  /** the source's own watermark delay, ms (absent: the stream's): a source given a longer delay on purpose is not "held back" by it */
  delay?: number;
}

export interface HealthInput {
  now: number;
  mode: Mode;
  policy: "min" | "max";
  /** the stream's watermark delay, ms */
  delay: number;
  /** whether the stream has an event-time column (no watermark without one) */
  hasEventTime: boolean;
  watermark: number;
  sources: Record<string, HealthSource>;
  /** recent progress reports, oldest first */
  progress: readonly ProgressReport[];
  /** a stream with a table: whether appending to it keeps failing (src/output/publisher.ts) */
  table?: { failing: boolean; failures: number; lastError: string | null; publishedSeq: number; committedSeq: number };
  /** a stream with stateKeys "hashed": how many of its partitions store keys by the unkeyed hash of a release before 27 (src/stream/keyed-key-hash.ts) */
  unkeyedHashPartitions?: number;
  /** per webhook source: redeliveries replayed, signatures refused by reason, committed rows (src/webhooks/tally.ts) */
  webhooks?: Record<string, { replayed: number; refused: Record<string, number>; rows: number }>; // the Coordinator's WebhookCounts
  /** the partition count and their storage (largest, all) as they last reported: health judges their capacity (src/stream/partition-capacity.ts) */
  partitions?: { count: number; largestBytes: number; totalBytes: number };
}

export interface HealthReport {
  status: HealthStatus;
  reasons: HealthReason[];
  /** under policy min: the source whose watermark is the min, when it lags the max by more than the delay */
  heldBackBy: string | null;
  watermark: number;
  /** the highest counted source watermark minus the global watermark, ms */
  watermarkLagMs: number;
  idleSources: string[];
  /** per webhook source: what it absorbed and refused (absent: no webhook counted) */
  webhooks?: HealthInput["webhooks"];
  /** the partitions' capacity, and the count to take when one nears a limit (absent: no partition figures given) */
  partitions?: Omit<PartitionCapacity, "severity" | "detail">;
  window: {
    batches: number;
    rows: number;
    late: number;
    rejected: number;
    lateRate: number | null;
    rejectedRate: number | null;
    /** copies whose content differed from the kept copy's (DESIGN §11) */
    conflicts?: number;
    conflictRate?: number | null;
    watermarkAdvanceMs: number | null;
    stateRowsFirst: number | null;
    stateRowsLast: number | null;
  };
}

/** A webhook source warns once at least this many of its deliveries were refused … */
const WEBHOOK_REFUSALS_MIN = 5;
/** … and they are at least this share of all it was sent. */
const WEBHOOK_REFUSED_SHARE = 0.1;

const minutes = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 6_000) / 10} min` : `${Math.round(ms / 100) / 10} s`);
const percent = (r: number) => `${Math.round(r * 1000) / 10}%`;

/** The recent window: the last `windowBatches` reports committed within `windowMs` of `now`. */
export function recentWindow(progress: readonly ProgressReport[], now: number, t: HealthThresholds): ProgressReport[] {
  return progress.filter((p) => p.committedAt >= now - t.windowMs).slice(-t.windowBatches);
}

/**
 * Under policy min, the counted source at the min when it lags the max by
 * more than the delay (ties: the first by name). Lag is measured in event
 * time (watermark + the source's own delay), so a source whose watermark is
 * lower only because it was given a longer delay is not held back.
 */
export function heldBackBy(input: Pick<HealthInput, "policy" | "delay" | "sources" | "hasEventTime">): string | null {
  if (input.policy !== "min" || !input.hasEventTime) return null;
  const counted = Object.entries(input.sources)
    .filter(([, s]) => s.counted)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (counted.length < 2) return null;
  let min = counted[0];
  let max = eventTimeOf(counted[0][1], input.delay);
  for (const c of counted) {
    if (eventTimeOf(c[1], input.delay) < eventTimeOf(min[1], input.delay)) min = c;
    max = Math.max(max, eventTimeOf(c[1], input.delay));
  }
  return max - eventTimeOf(min[1], input.delay) > input.delay ? min[0] : null;
}

/** How far a source's event time has got: its watermark plus its own delay (one that has none yet: the stream's). */
const eventTimeOf = (s: HealthSource, delay: number) => s.watermark + (s.watermark > 0 ? (s.delay ?? delay) : delay);

export function evaluateHealth(input: HealthInput, thresholds: Partial<HealthThresholds> = {}): HealthReport {
  const t = { ...DEFAULT_THRESHOLDS, ...thresholds };
  const reasons: HealthReason[] = [];
  const win = recentWindow(input.progress, input.now, t);
  const rows = win.reduce((a, p) => a + p.input, 0);
  const late = win.reduce((a, p) => a + p.late, 0);
  const rejected = win.reduce((a, p) => a + p.rejected, 0);
  const conflicts = win.reduce((a, p) => a + (p.conflicts ?? 0), 0);
  const accepted = rows - rejected;
  const first = win[0];
  const last = win[win.length - 1];
  // Measured from the first watermark there was: a window that starts with the stream's
  // first commit (watermark 0, i.e. none yet) would otherwise count the years since 1970.
  const start = first ? (win.flatMap((p) => [p.watermark, p.watermarkAfter]).find((w) => w > 0) ?? 0) : null;
  const advance = start !== null && last ? last.watermarkAfter - start : null;
  const enough = win.length >= t.minBatches;

  // 1. Stalled: rows keep arriving, the watermark does not move.
  if (input.hasEventTime && enough && accepted > 0 && advance === 0) {
    reasons.push({
      code: "watermark-stalled",
      severity: "critical",
      detail: `the watermark has not advanced over the last ${win.length} commits (${accepted} accepted rows): state does not expire and nothing becomes late`,
    });
  }

  // 2. Held back: the min is pinned by one source far behind the others.
  const held = heldBackBy(input);
  const counted = Object.values(input.sources).filter((s) => s.counted);
  const top = counted.length > 0 ? Math.max(...counted.map((s) => s.watermark)) : input.watermark;
  if (held !== null) {
    const s = input.sources[held];
    reasons.push({
      code: "held-back",
      severity: "warn",
      detail: `source "${held}" holds the watermark back: its watermark lags the highest by ${minutes(top - s.watermark)}, more than the delay (${minutes(input.delay)})${
        s.lastBatchAt === null ? "; it has never sent" : ""
      }`,
    });
  }

  // 3. State rising without plateau: it only grew across the window, with nothing removed,
  // though the watermark swept past the retention (so keys should have expired).
  const states = win.map((p) => p.numRowsTotal);
  const retention = input.mode === "within-watermark" ? 2 * input.delay : input.delay;
  const neverFell = states.every((n, i) => i === 0 || n >= states[i - 1]);
  const removed = win.reduce((a, p) => a + p.numRowsRemoved, 0);
  if (input.mode !== "global" && enough && neverFell && removed === 0 && states[states.length - 1] > states[0] && advance !== null && advance > retention) {
    reasons.push({
      code: "state-rising",
      severity: "warn",
      detail: `state grew from ${states[0]} to ${states[states.length - 1]} rows over ${win.length} commits with nothing expiring, while the watermark advanced ${minutes(advance)} (retention ≈ ${minutes(retention)})`,
    });
  }

  // 4. Late and rejected rates.
  const lateRate = rows > 0 ? late / rows : null;
  const rejectedRate = rows > 0 ? rejected / rows : null;
  if (rows >= t.minRows && lateRate !== null && lateRate >= t.lateWarn) {
    reasons.push({
      code: "late-rate",
      severity: lateRate >= t.lateCritical ? "critical" : "warn",
      detail: `${percent(lateRate)} of recent rows were late (${late} of ${rows}); threshold ${percent(lateRate >= t.lateCritical ? t.lateCritical : t.lateWarn)}`,
    });
  }
  if (rows >= t.minRows && rejectedRate !== null && rejectedRate >= t.rejectedWarn) {
    reasons.push({
      code: "rejected-rate",
      severity: rejectedRate >= t.rejectedCritical ? "critical" : "warn",
      detail: `${percent(rejectedRate)} of recent rows were rejected (${rejected} of ${rows}); threshold ${percent(
        rejectedRate >= t.rejectedCritical ? t.rejectedCritical : t.rejectedWarn,
      )}`,
    });
  }

  // 5. The table: appending committed output to it fails (the stream itself goes on; the commits wait).
  if (input.table?.failing) {
    const behind = input.table.committedSeq - input.table.publishedSeq;
    reasons.push({
      code: "table-failing",
      severity: "warn",
      detail: `appending to the table failed ${input.table.failures} time(s) in a row (${behind} commit(s) not in it yet, retried with backoff): ${input.table.lastError ?? "unknown error"}`,
    });
  }

  const conflictRate = rows > 0 ? conflicts / rows : null;
  if (rows >= t.minRows && conflictRate !== null && t.conflictWarn !== undefined && conflictRate >= t.conflictWarn) {
    reasons.push({
      code: "conflict-rate",
      severity: "warn",
      detail: `${percent(conflictRate)} of recent rows were conflicts (${conflicts} of ${rows}): copies of a kept id with other content; see GET …/conflicts`,
    });
  }

  // 8. A webhook source whose deliveries are refused more than now and then: a wrong secret, a clock, or someone probing.
  for (const [source, w] of Object.entries(input.webhooks ?? {})) {
    const refused = Object.values(w.refused).reduce((a, n) => a + n, 0);
    if (refused < WEBHOOK_REFUSALS_MIN || refused < WEBHOOK_REFUSED_SHARE * (refused + w.rows + w.replayed)) continue;
    const why = Object.entries(w.refused)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `${n} ${reason}`)
      .join(", ");
    reasons.push({
      code: "webhook-refusals",
      severity: "warn",
      detail:
        `source ${source}: ${refused} webhook deliveries were refused by their signature (${why}) against ${w.rows + w.replayed} accepted; ` +
        `check the signing secret the provider has for this endpoint (a rotated secret, another endpoint's), and the server clocks for "stale"`,
    });
  }

  // 9. Hashed keys whose hash anyone can compute: a producer can make another's event a "duplicate" on purpose.
  if ((input.unkeyedHashPartitions ?? 0) > 0) {
    reasons.push({
      code: "unkeyed-key-hash",
      severity: "warn",
      detail:
        `${input.unkeyedHashPartitions} partition(s) store keys by the unkeyed 64-bit hash of an earlier release: a producer can craft a key that collides with ` +
        `another's id, so that the real event is dropped as a duplicate. Streams created now hash keys with a secret per partition; create this one anew ` +
        `(under a new name, or after its keys have expired) to get it`,
    });
  }

  // 10. A partition nearing a Durable Object's storage or call rate: a count to PATCH to.
  const capacity = input.partitions
    ? partitionCapacity({
        partitions: input.partitions.count,
        largestBytes: input.partitions.largestBytes,
        totalBytes: input.partitions.totalBytes,
        window: win,
        now: input.now,
      })
    : null;
  if (capacity?.severity) reasons.push({ code: "partition-capacity", severity: capacity.severity, detail: capacity.detail! });

  const status: HealthStatus = reasons.some((r) => r.severity === "critical") ? "critical" : reasons.length > 0 ? "warn" : "ok";
  return {
    status,
    reasons,
    heldBackBy: held,
    watermark: input.watermark,
    watermarkLagMs: Math.max(0, top - input.watermark),
    idleSources: Object.keys(input.sources)
      .filter((s) => input.sources[s].idle)
      .sort(),
    ...(input.webhooks && Object.keys(input.webhooks).length > 0 ? { webhooks: input.webhooks } : {}),
    ...(capacity
      ? {
          partitions: {
            partitions: capacity.partitions,
            largestPartitionBytes: capacity.largestPartitionBytes,
            callsPerSecondEach: capacity.callsPerSecondEach,
            proposedPartitions: capacity.proposedPartitions,
          },
        }
      : {}),
    window: {
      batches: win.length,
      rows,
      late,
      rejected,
      lateRate,
      rejectedRate,
      conflicts,
      conflictRate,
      watermarkAdvanceMs: advance,
      stateRowsFirst: states[0] ?? null,
      stateRowsLast: states[states.length - 1] ?? null,
    },
  };
}

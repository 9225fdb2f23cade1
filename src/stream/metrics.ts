/**
 * Counters a stream's Coordinator keeps in SQLite (one upsert per micro-batch,
 * inside its commit transaction), and their Prometheus text exposition. Pure:
 * no Cloudflare imports.
 */
import type { ProgressReport } from "./batch-outcome";

export const OUTCOMES = ["emitted", "duplicate", "late", "rejected"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Upper bounds (seconds) of the batch-duration histogram's buckets; +Inf is implied. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** The table (created with the stream, or on upgrade). name: a counter; source: "" for stream-wide ones. */
export const METRICS_TABLE =
  "CREATE TABLE IF NOT EXISTS metrics (name TEXT NOT NULL, source TEXT NOT NULL, n REAL NOT NULL, PRIMARY KEY (name, source)) WITHOUT ROWID;";

/** Adds a JSON array of [name, source, delta] to the counters: one statement however many there are. */
export const METRICS_UPSERT = `INSERT INTO metrics (name, source, n)
  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?) WHERE true
  ON CONFLICT (name, source) DO UPDATE SET n = n + excluded.n`;

/** What one committed batch adds. */
export interface CommittedFigures {
  source: string;
  emitted: number;
  duplicates: number;
  late: number;
  rejected: number;
  /** of the duplicates or rejected: copies whose content differed from the kept copy's (DESIGN §11) */
  conflicts?: number;
  durationMs: number;
}

/** The bucket a duration falls in: the first whose bound is at or above it; DURATION_BUCKETS.length is +Inf. */
export function bucketOf(seconds: number): number {
  const i = DURATION_BUCKETS.findIndex((le) => seconds <= le);
  return i === -1 ? DURATION_BUCKETS.length : i;
}

/** The counter deltas of a micro-batch's committed batches, summed per counter. */
export function metricDeltas(batches: readonly CommittedFigures[]): [string, string, number][] {
  const sums = new Map<string, [string, string, number]>();
  const add = (name: string, source: string, n: number) => {
    if (n === 0) return;
    const k = `${name}\n${source}`;
    const e = sums.get(k);
    if (e) e[2] += n;
    else sums.set(k, [name, source, n]);
  };
  for (const b of batches) {
    add("rows:emitted", b.source, b.emitted);
    add("rows:duplicate", b.source, b.duplicates);
    add("rows:late", b.source, b.late);
    add("rows:rejected", b.source, b.rejected);
    add("conflicts", b.source, b.conflicts ?? 0);
    add("batches", "", 1);
    add(`duration:${bucketOf(b.durationMs / 1000)}`, "", 1);
    add("duration:sum", "", b.durationMs / 1000);
  }
  return [...sums.values()];
}

/** One stream's figures for /metrics. */
export interface StreamMetrics {
  stream: string;
  watermark: number;
  /** source → its watermark */
  sources: Record<string, number>;
  rows: { source: string; outcome: Outcome; n: number }[];
  /** per source: conflicts (a subset of the duplicate and rejected rows, so a counter of its own) */
  conflicts?: { source: string; n: number }[];
  /** per webhook source: redeliveries answered as replays, and deliveries whose signature was refused, by reason (src/webhooks/tally.ts) */
  webhooks?: WebhookFigures[];
  batches: number;
  /** per bucket (not cumulative), DURATION_BUCKETS.length + 1 of them */
  durationBuckets: number[];
  durationSum: number;
  state: { rows: number; bytes: number };
  /** the Coordinator's own records (DESIGN §9); absent: not reported */
  bookkeeping?: { bytes: number; batchesRemembered: number };
}

/** A webhook source's counts: `refused` by reason (malformed, stale, wrong-provider, bad-signature). */
export interface WebhookFigures {
  source: string;
  replayed: number;
  refused: Record<string, number>;
}

/** Reads the counters table back. */
export function streamMetricsOf(
  stream: string,
  counters: readonly { name: string; source: string; n: number }[],
  rest: Pick<StreamMetrics, "watermark" | "sources" | "state" | "bookkeeping">,
): StreamMetrics {
  const m: StreamMetrics = { stream, ...rest, rows: [], batches: 0, durationBuckets: DURATION_BUCKETS.map(() => 0).concat(0), durationSum: 0 };
  for (const c of counters) {
    const [kind, what] = c.name.split(":");
    if (kind === "rows" && (OUTCOMES as readonly string[]).includes(what)) m.rows.push({ source: c.source, outcome: what as Outcome, n: c.n });
    else if (c.name === "conflicts") (m.conflicts ??= []).push({ source: c.source, n: c.n });
    else if (c.name === "batches") m.batches = c.n;
    else if (c.name === "duration:sum") m.durationSum = c.n;
    else if (kind === "duration" && Number.isInteger(Number(what)) && Number(what) < m.durationBuckets.length) m.durationBuckets[Number(what)] = c.n;
  }
  const webhooks = webhookFigures(counters).map(({ source, replayed, refused }) => ({ source, replayed, refused }));
  if (webhooks.length > 0) m.webhooks = webhooks;
  m.rows.sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : OUTCOMES.indexOf(a.outcome) - OUTCOMES.indexOf(b.outcome)));
  return m;
}

/** The webhook counts among the counters (src/webhooks/tally.ts names them), per source, with the source's committed rows. */
export function webhookFigures(counters: readonly { name: string; source: string; n: number }[]): (WebhookFigures & { rows: number })[] {
  const bySource = new Map<string, WebhookFigures & { rows: number }>();
  const of = (source: string) => {
    let w = bySource.get(source);
    if (!w) bySource.set(source, (w = { source, replayed: 0, refused: {}, rows: 0 }));
    return w;
  };
  for (const c of counters) {
    if (c.name === "webhook:replayed") of(c.source).replayed = c.n;
    else if (c.name.startsWith("webhook:refused:")) of(c.source).refused[c.name.slice("webhook:refused:".length)] = c.n;
  }
  for (const c of counters) if (c.name.startsWith("rows:") && bySource.has(c.source)) of(c.source).rows += c.n;
  return [...bySource.values()].sort((a, b) => (a.source < b.source ? -1 : 1));
}

/** A label value, escaped as the text format wants (backslash, double quote, newline). */
function label(v: string): string {
  return v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

function labels(l: Record<string, string>): string {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${label(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** The Prometheus text exposition (version 0.0.4) of every stream's figures. */
export function renderPrometheus(streams: readonly StreamMetrics[]): string {
  const out: string[] = [];
  const family = (name: string, type: string, help: string, samples: string[]) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
  };
  const sample = (name: string, l: Record<string, string>, v: number) => `${name}${labels(l)} ${Number.isFinite(v) ? v : 0}`;
  family(
    "edge_dedup_rows_total",
    "counter",
    "Rows of committed batches, by outcome.",
    streams.flatMap((s) => s.rows.map((r) => sample("edge_dedup_rows_total", { stream: s.stream, source: r.source, outcome: r.outcome }, r.n))),
  );
  family(
    "edge_dedup_conflicts_total",
    "counter",
    "Copies of a remembered key whose content differed from the kept copy's (also counted as duplicate or rejected).",
    streams.flatMap((s) => (s.conflicts ?? []).map((c) => sample("edge_dedup_conflicts_total", { stream: s.stream, source: c.source }, c.n))),
  );
  family(
    "edge_dedup_webhook_replays_total",
    "counter",
    "Provider redeliveries answered from the ledger (the first answer again, no new row); later ones are duplicate rows.",
    streams.flatMap((s) => (s.webhooks ?? []).map((w) => sample("edge_dedup_webhook_replays_total", { stream: s.stream, source: w.source }, w.replayed))),
  );
  family(
    "edge_dedup_webhook_signatures_refused_total",
    "counter",
    "Webhook deliveries refused (401) by their signature: malformed, stale, wrong-provider, bad-signature.",
    streams.flatMap((s) =>
      (s.webhooks ?? []).flatMap((w) =>
        Object.entries(w.refused).map(([reason, n]) =>
          sample("edge_dedup_webhook_signatures_refused_total", { stream: s.stream, source: w.source, reason }, n),
        ),
      ),
    ),
  );
  family(
    "edge_dedup_watermark_ms",
    "gauge",
    "Watermark, epoch ms: the stream's (no source label) and each source's.",
    streams.flatMap((s) => [
      sample("edge_dedup_watermark_ms", { stream: s.stream }, s.watermark),
      ...Object.entries(s.sources).map(([src, wm]) => sample("edge_dedup_watermark_ms", { stream: s.stream, source: src }, wm)),
    ]),
  );
  family(
    "edge_dedup_state_rows",
    "gauge",
    "Keys held in state, as the partitions last reported (during a rescale, asked of them: each key once).",
    streams.map((s) => sample("edge_dedup_state_rows", { stream: s.stream }, s.state.rows)),
  );
  family(
    "edge_dedup_state_bytes",
    "gauge",
    "Bytes of state, as the partitions last reported.",
    streams.map((s) => sample("edge_dedup_state_bytes", { stream: s.stream }, s.state.bytes)),
  );
  const booked = streams.filter((s) => s.bookkeeping);
  family(
    "edge_dedup_bookkeeping_bytes",
    "gauge",
    "The Coordinator's own storage (ledger, outbox, figures), bytes.",
    booked.map((s) => sample("edge_dedup_bookkeeping_bytes", { stream: s.stream }, s.bookkeeping!.bytes)),
  );
  family(
    "edge_dedup_batches_remembered",
    "gauge",
    "Committed batch ids within the idempotency window.",
    booked.map((s) => sample("edge_dedup_batches_remembered", { stream: s.stream }, s.bookkeeping!.batchesRemembered)),
  );
  family(
    "edge_dedup_batches_total",
    "counter",
    "Committed batches.",
    streams.map((s) => sample("edge_dedup_batches_total", { stream: s.stream }, s.batches)),
  );
  family(
    "edge_dedup_batch_duration_seconds",
    "histogram",
    "Time from a batch's start to its commit.",
    streams.flatMap((s) => {
      let cumulative = 0;
      const buckets = [...DURATION_BUCKETS.map(String), "+Inf"].map((le, i) => {
        cumulative += s.durationBuckets[i] ?? 0;
        return sample("edge_dedup_batch_duration_seconds_bucket", { stream: s.stream, le }, cumulative);
      });
      return [
        ...buckets,
        sample("edge_dedup_batch_duration_seconds_sum", { stream: s.stream }, s.durationSum),
        sample("edge_dedup_batch_duration_seconds_count", { stream: s.stream }, cumulative),
      ];
    }),
  );
  return out.join("\n") + "\n";
}

/** The log line of one micro-batch commit (also the Analytics Engine data point's figures). */
export type CommitLine = {
  stream: string;
  /** request batches committed together */
  batches: number;
  /** from the earliest member's start to the commit */
  durationMs: number;
  /** watermark: the one before the commit */
} & Pick<ProgressReport, "emitted" | "duplicates" | "late" | "rejected" | "watermark" | "watermarkAfter">;

export function commitLine(stream: string, done: readonly CommittedFigures[], watermark: number, watermarkAfter: number): CommitLine {
  const sum = (f: (b: CommittedFigures) => number) => done.reduce((a, b) => a + f(b), 0);
  return {
    stream,
    batches: done.length,
    emitted: sum((b) => b.emitted),
    duplicates: sum((b) => b.duplicates),
    late: sum((b) => b.late),
    rejected: sum((b) => b.rejected),
    watermark,
    watermarkAfter,
    durationMs: Math.max(0, ...done.map((b) => b.durationMs)),
  };
}

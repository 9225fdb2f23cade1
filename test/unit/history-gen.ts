/**
 * A made-up history for the advisor: sources that deliver out of order, and
 * producers that resend some events (the same event time, or a later one).
 * Rows are in arrival order. Deterministic from the seed.
 */
import { rng } from "../support/rng.ts";

export interface GenOptions {
  seed?: number;
  /** original events (copies come on top) */
  events?: number;
  /** ms between arrivals */
  every?: number;
  /** per source: mean ms an event arrives after its event time */
  sources?: Record<string, number>;
  /** share of events sent again */
  resend?: number;
  /** mean event-time gap of a resend that is not at the same time, ms */
  gapMean?: number;
}

export interface GenRow {
  id: string;
  ts: string;
  src: string;
  amount: number;
}

export function generateHistory(o: GenOptions = {}): GenRow[] {
  const random = rng(o.seed ?? 1);
  const n = o.events ?? 2_000;
  const every = o.every ?? 500;
  const sources = Object.entries(o.sources ?? { web: 2_000, mobile: 20_000, batch: 60_000 });
  const resend = o.resend ?? 0.1;
  const gapMean = o.gapMean ?? 60_000;
  const exp = (mean: number) => Math.round(-Math.log(1 - random()) * mean);
  const base = Date.parse("2026-11-29T00:00:00Z");
  const out: { arrival: number; row: GenRow }[] = [];
  for (let i = 0; i < n; i++) {
    const [src, lag] = sources[Math.floor(random() * sources.length)];
    const arrival = base + i * every;
    const t = arrival - exp(lag);
    const id = `evt_${i}`;
    const amount = Math.floor(random() * 10_000);
    out.push({ arrival, row: { id, ts: new Date(t).toISOString(), src, amount } });
    if (random() < resend) {
      const gap = random() < 0.5 ? 0 : exp(gapMean);
      out.push({ arrival: arrival + gap + exp(5_000), row: { id, ts: new Date(t + gap).toISOString(), src, amount } });
    }
  }
  out.sort((a, b) => a.arrival - b.arrival);
  return out.map((x) => x.row);
}

export const toNdjson = (rows: readonly unknown[]) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n";

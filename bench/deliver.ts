/**
 * The bench's delivery load (`deliver16`, issue #30): does a destination keep
 * up with its stream? bench/run.ts drives webhook16's ingest (1 event per
 * request, 16 clients) into an edge-dedup stream that has ONE HTTP
 * destination; this module owns that destination's handler and the
 * measuring around the ingest.
 *
 * The handler: a node:http server on 127.0.0.1 (in the bench's process) that
 * reads each request, answers 200 after HANDLER_MS, verifies nothing, and
 * notes each arrival's time and webhook-id (a row's id is the same on every
 * attempt, so distinct ids are distinct rows delivered). While the cell runs
 * and after it, the destination's GET is sampled every SAMPLE_MS (lagMs,
 * pending, and each lane's lag once the API reports lanes). After the last
 * request it waits (at most DRAIN_TIMEOUT_MS) until every committed row has
 * arrived, samples a little longer, then deletes the destination (its sender
 * stops: nothing runs on into the next cell).
 *
 * Figures (measureDelivery's result): ingested rows/s = distinct rows
 * committed ÷ the ingest's duration; delivered by the end of ingest = distinct
 * webhook-ids arrived by the last request's answer, ÷ the same duration;
 * delivery rate = the same ids ÷ the time from the first arrival to the end
 * of ingest (the handler's rate while it was being sent rows: a destination
 * that keeps up reads ≈ the ingest rate, where counting over the whole
 * ingest reads a little less, the rows committed in the last round trip
 * not having arrived yet); drain = from the end of ingest to the last row's
 * first arrival.
 *
 * Environment: BENCH_LANES=n (1–64) sends `"lanes": n` in the destination's
 * PUT; unset, no `lanes` field is sent (the service's default).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fmt, http, sleep } from "./harness.ts";

/** The handler's answer time: a handler doing real work (a database write, a call out). */
export const HANDLER_MS = 100;
/** How often the destination's GET is read. */
export const SAMPLE_MS = 1_000;
/** After the last request: how long the bench waits for every row to arrive before it reports "not drained". */
export const DRAIN_TIMEOUT_MS = 120_000;
/** After the backlog drained: sampled this much longer, so the series shows the lag back at 0. */
const TRAIL_MS = 2_000;
/** Goals: delivery ÷ ingest (the rate while delivering), and the drain after the last request. */
export const DELIVER_GOALS = { ratio: 1.0, drainSeconds: 5 };
/**
 * A deliver cell ingests for at least this long (the cell's seconds if longer): its rate is judged against the
 * ingest's, and the first second's ramp (the destination made, its lanes woken) weighs too much in 8 s (0.995×
 * in 8 s, 1.003× in 30 s, both drained in 0.1 s).
 */
export const DELIVER_MIN_MS = 30_000;
/** What a deliver cell may add to a run beyond a cell's time (the watchdog's budget): its longer ingest, the drain's bound, the trail, setup. */
export const DELIVER_CELL_EXTRA_MS = DELIVER_MIN_MS + DRAIN_TIMEOUT_MS + TRAIL_MS + 30_000;
const GET_TIMEOUT_MS = 5_000;

function lanesOf(v: string | undefined): number | null {
  if (v === undefined || v === "") return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`BENCH_LANES: a whole number from 1 to 64, not ${JSON.stringify(v)}`);
  return n;
}
/** Checked at load: a bad value fails the run before any server starts. */
export const LANES = lanesOf(process.env.BENCH_LANES);

/** The handler: counts arrivals (with times) and distinct webhook-ids of one stream; answers 200 after HANDLER_MS. */
class Handler {
  private readonly server = createServer((req, res) => this.handle(req, res));
  /** webhook-id → its first arrival (performance.now()) */
  readonly first = new Map<string, number>();
  /** every arrival's time, retries included */
  readonly arrivals: number[] = [];
  /** requests without this stream's webhook-id (another stream's, or none): counted, not delivered */
  foreign = 0;
  private readonly prefix: string;
  constructor(prefix: string) {
    this.prefix = prefix;
  }

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const at = performance.now();
    const id = req.headers["webhook-id"];
    this.arrivals.push(at);
    if (typeof id === "string" && id.startsWith(this.prefix)) {
      if (!this.first.has(id)) this.first.set(id, at);
    } else this.foreign++;
    req.resume(); // the body is read and dropped: nothing is verified
    req.on("end", () => setTimeout(() => res.writeHead(200, { "content-type": "text/plain" }).end("ok"), HANDLER_MS));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/** One reading of the destination's GET, `t` seconds after the first request. */
export interface DeliverySample {
  t: number;
  lagMs: number | null;
  pending: number | null;
  /** distinct rows arrived at the handler by then */
  arrived: number;
  /** per lane, once the API reports lanes: how many, and the largest lane lag */
  lanes?: number;
  maxLaneLagMs?: number;
}

export interface DeliveryResult {
  handlerMs: number;
  /** what the PUT asked for (BENCH_LANES), and what the GET reported (null: no lanes in the answer) */
  lanesAsked: number | null;
  lanesReported: number | null;
  ingestSeconds: number;
  rowsCommitted: number;
  ingestedPerSec: number;
  /** distinct rows arrived by the end of ingest, and ÷ the ingest's duration */
  deliveredByEnd: number;
  deliveredPerSec: number;
  /** from the first arrival to the end of ingest, and deliveredByEnd ÷ that */
  deliveringSeconds: number;
  deliveryRatePerSec: number;
  /** deliveryRatePerSec ÷ ingestedPerSec: the judged ratio */
  ratio: number;
  /** deliveredByEnd ÷ rowsCommitted */
  shareByEnd: number;
  drained: boolean;
  /** from the end of ingest to the last row's first arrival (null: not drained within DRAIN_TIMEOUT_MS) */
  drainSeconds: number | null;
  /** distinct rows arrived when the bench stopped waiting */
  arrived: number;
  /** requests the handler got (each attempt), and those not of this stream */
  arrivals: number;
  foreign: number;
  maxLagMs: number | null;
  samples: DeliverySample[];
  /** distinct rows first arriving in each second after the first request */
  arrivedPerSecond: number[];
}

interface DestinationGet {
  lagMs?: number;
  pending?: number;
  lanes?: number;
  laneStatus?: { lane: number; lagMs?: number }[];
}

/**
 * Creates the destination `name` on `stream` (pointing at a new handler),
 * runs `ingest` (the cell's timed load; it returns its duration and the rows
 * it committed), measures the delivery during and after it, and removes the
 * destination and the handler.
 */
export async function measureDelivery(opts: {
  url: string;
  token: string;
  stream: string;
  name?: string;
  ingest: () => Promise<{ ms: number; emitted: number }>;
}): Promise<DeliveryResult> {
  const name = opts.name ?? "bench";
  const path = `${opts.url}/v1/streams/${encodeURIComponent(opts.stream)}/destinations/${encodeURIComponent(name)}`;
  const headers = { authorization: `Bearer ${opts.token}`, "content-type": "application/json" };
  const handler = new Handler(`${opts.stream}.`);
  const handlerUrl = await handler.start();
  const samples: DeliverySample[] = [];
  let lanesReported: number | null = null;
  let sampling = true;
  try {
    const body = { type: "http", url: `${handlerUrl}/${opts.stream}`, timeout: "10 seconds", ...(LANES !== null ? { lanes: LANES } : {}) };
    const put = await http("PUT", path, { body: JSON.stringify(body), headers });
    if (put.status !== 201) throw new Error(`PUT ${path}: HTTP ${put.status} ${put.text.slice(0, 400)}`);

    // The series' clock starts with the ingest, which starts right after the sampler's first reading is asked for.
    const t0 = performance.now();
    const sampler = (async () => {
      for (let k = 1; sampling; k++) {
        const at = performance.now();
        const s: DeliverySample = { t: (at - t0) / 1000, lagMs: null, pending: null, arrived: handler.first.size };
        try {
          const a = await fetch(path, { headers, signal: AbortSignal.timeout(GET_TIMEOUT_MS) });
          if (a.ok) {
            const g = (await a.json()) as DestinationGet;
            s.lagMs = g.lagMs ?? null;
            s.pending = g.pending ?? null;
            if (Array.isArray(g.laneStatus)) {
              lanesReported = g.lanes ?? g.laneStatus.length;
              s.lanes = lanesReported;
              s.maxLaneLagMs = Math.max(0, ...g.laneStatus.map((l) => l.lagMs ?? 0));
            }
          } else await a.body?.cancel();
        } catch {
          // a slow answer: this second has no reading
        }
        samples.push(s);
        await sleep(Math.max(0, t0 + k * SAMPLE_MS - performance.now()));
      }
    })();

    let d: { ms: number; emitted: number };
    try {
      d = await opts.ingest();
    } catch (e) {
      sampling = false;
      await sampler;
      throw e;
    }
    const end = performance.now();
    const deadline = end + DRAIN_TIMEOUT_MS;
    while (handler.first.size < d.emitted && performance.now() < deadline) await sleep(50);
    const drained = handler.first.size >= d.emitted;
    await sleep(TRAIL_MS);
    sampling = false;
    await sampler;

    const firsts = [...handler.first.values()];
    const byEnd = firsts.filter((t) => t <= end);
    const firstArrival = firsts.length > 0 ? firsts.reduce((a, b) => Math.min(a, b)) : null;
    const lastArrival = firsts.reduce((a, b) => Math.max(a, b), end);
    const seconds = d.ms / 1000;
    const deliveringSeconds = firstArrival === null || firstArrival > end ? 0 : (end - firstArrival) / 1000;
    const ingestedPerSec = d.emitted / seconds;
    const deliveryRatePerSec = deliveringSeconds > 0 ? byEnd.length / deliveringSeconds : 0;
    const arrivedPerSecond: number[] = [];
    for (const t of firsts) {
      const k = Math.floor((t - t0) / 1000);
      if (k < 0) continue;
      while (arrivedPerSecond.length <= k) arrivedPerSecond.push(0);
      arrivedPerSecond[k]++;
    }
    const lags = samples.map((s) => s.lagMs).filter((x): x is number => x !== null);
    return {
      handlerMs: HANDLER_MS,
      lanesAsked: LANES,
      lanesReported,
      ingestSeconds: seconds,
      rowsCommitted: d.emitted,
      ingestedPerSec,
      deliveredByEnd: byEnd.length,
      deliveredPerSec: byEnd.length / seconds,
      deliveringSeconds,
      deliveryRatePerSec,
      ratio: ingestedPerSec > 0 ? deliveryRatePerSec / ingestedPerSec : 0,
      shareByEnd: d.emitted > 0 ? byEnd.length / d.emitted : 0,
      drained,
      drainSeconds: drained ? (lastArrival - end) / 1000 : null,
      arrived: handler.first.size,
      arrivals: handler.arrivals.length,
      foreign: handler.foreign,
      maxLagMs: lags.length > 0 ? Math.max(...lags) : null,
      samples,
      arrivedPerSecond,
    };
  } finally {
    sampling = false;
    // The sender stops with its destination: no backlog runs on into the next cell.
    await http("DELETE", path, { headers }).catch(() => undefined);
    await handler.stop();
  }
}

/** A series as one line per `perLine` values, `| ` marking where ingest ended. */
function series(label: string, values: string[], endIndex: number, perLine = 30): string[] {
  const marked = values.map((v, i) => (i === endIndex ? `| ${v}` : v));
  const lines: string[] = [];
  for (let i = 0; i < marked.length; i += perLine) lines.push(`${i === 0 ? label : " ".repeat(label.length)}${marked.slice(i, i + perLine).join(" ")}`);
  return lines.length > 0 ? lines : [`${label}(none)`];
}

export function printDelivery(r: DeliveryResult): void {
  const lanes = r.lanesReported !== null ? `${r.lanesReported} lanes` : r.lanesAsked !== null ? `${r.lanesAsked} lanes asked` : "no lanes reported";
  console.log(
    `  delivery to a ${r.handlerMs} ms handler (${lanes}): ingested ${fmt(r.ingestedPerSec)} rows/s (${fmt(r.rowsCommitted)} rows in ${fmt(r.ingestSeconds, 1)} s);` +
      ` delivered by the end of ingest ${fmt(r.deliveredByEnd)} (${fmt(100 * r.shareByEnd)}%), ${fmt(r.deliveredPerSec)} rows/s over the ingest,` +
      ` ${fmt(r.deliveryRatePerSec)} rows/s while delivering (${fmt(r.deliveringSeconds, 1)} s): ${fmt(r.ratio, 3)}× the ingest`,
  );
  console.log(
    `  drained: ${r.drained ? `${fmt(r.drainSeconds!, 1)} s after the last request` : `not drained within ${DRAIN_TIMEOUT_MS / 1000} s (${fmt(r.arrived)} of ${fmt(r.rowsCommitted)} rows arrived)`};` +
      ` ${fmt(r.arrivals)} requests at the handler for ${fmt(r.arrived)} rows${r.foreign > 0 ? `, ${r.foreign} not this stream's` : ""}; max lagMs ${r.maxLagMs === null ? "n/a" : fmt(r.maxLagMs)}`,
  );
  const end = r.samples.findIndex((s) => s.t >= r.ingestSeconds);
  const n = (x: number | null, f: (v: number) => string) => (x === null ? "?" : f(x));
  console.log(`  every ${SAMPLE_MS / 1000} s from the first request ("|": ingest ended):`);
  for (const line of series(
    "    lag s    ",
    r.samples.map((s) => n(s.lagMs, (v) => (v / 1000).toFixed(1))),
    end,
  ))
    console.log(line);
  for (const line of series(
    "    pending  ",
    r.samples.map((s) => n(s.pending, (v) => String(v))),
    end,
  ))
    console.log(line);
  if (r.samples.some((s) => s.lanes !== undefined))
    for (const line of series(
      "    lane max ",
      r.samples.map((s) => n(s.maxLaneLagMs ?? null, (v) => (v / 1000).toFixed(1))),
      end,
    ))
      console.log(line);
  const endSecond = Math.floor(r.ingestSeconds);
  for (const line of series("    rows/s   ", r.arrivedPerSecond.map(String), endSecond)) console.log(line);
}

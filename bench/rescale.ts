/**
 * An online rescale under load (issue #32, DESIGN §12): `npm run bench`'s
 * cell rescale8to16 (measureRescale), and `npm run bench:rescale` runs it
 * alone. It starts `wrangler dev` on this checkout, fills a stream of 8
 * partitions with RESCALE_KEYS_PER_PARTITION keys each (500-event batches,
 * event times over the first half of the delay, so that none expires), then
 * drives webhook16's load (1 event per request, 16 closed-loop clients, new
 * ids and ~20% repeats of filled ones) for BEFORE_MS, PATCHes the stream to
 * 16 partitions, keeps the load until GET shows no `rescale`, and AFTER_MS
 * longer. Printed: keys moved per second (the keys ÷ the move's time), the
 * longest ingest pause (the longest a request took, from the PATCH to the
 * end of the move: goal ≤ 1 s), and events/s during the move against before
 * it (goal ≥ 0.5×), each PASS or WARN. Then it checks every repeat sent was
 * answered a duplicate and the stream holds every key once.
 *
 *   RESCALE_KEYS_PER_PARTITION=100000   keys per old partition (the sizing; 10000 for a quick look)
 *
 * Safety as in bench/harness.ts: 127.0.0.1 only, the server in its own process
 * group, killed at the end and on error; every phase bounded in time.
 */
import { Agent, request } from "node:http";
import { pathToFileURL } from "node:url";
import { fmt, http, killEverything, PROJECT_FILES, sleep, startWrangler } from "./harness.ts";

const TOKEN = "bench-token";
const HOUR = 3_600_000;
const PARTITIONS = 8;
const TARGET = 16;
export const KEYS_PER_PARTITION = Number(process.env.RESCALE_KEYS_PER_PARTITION ?? 100_000);
const FILL_BATCH = 500;
const FILL_CLIENTS = 4;
const CLIENTS = 16;
const BEFORE_MS = 8_000;
const AFTER_MS = 3_000;
const MOVE_TIMEOUT_MS = 20 * 60_000;
/** The cell's bound: the fill, the move's timeout and the load around it. */
export const RESCALE_CELL_MAX_MS = MOVE_TIMEOUT_MS + 5 * 60_000;
export const RESCALE_GOALS = { pauseMs: 1_000, duringRatio: 0.5 };

export interface RescaleResult {
  keys: number;
  from: number;
  to: number;
  moveSeconds: number;
  keysPerSec: number;
  /** webhook16's events/s before the PATCH and during the move, and during ÷ before */
  before: number;
  during: number;
  ratio: number;
  /** the longest a request took from the PATCH to the end of the move, ms */
  pauseMs: number;
  repeats: number;
  /** repeats not answered as duplicates (must be 0) */
  missed: number;
  stateRows: number;
  distinctSent: number;
  partitionsAfter: number;
}

interface Sample {
  at: number;
  ms: number;
  duplicate: boolean;
  repeat: boolean;
}

const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

function post(agent: Agent, url: URL, body: string, key: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "POST", agent, headers: { ...auth, "idempotency-key": key, "content-length": String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The cell, on a server of its own; throws if the rescale lost or repeated a key. */
export async function measureRescale(): Promise<RescaleResult> {
  const server = await startWrangler({
    name: "edge-dedup",
    files: PROJECT_FILES,
    vars: { ADMIN_TOKEN: TOKEN },
    ready: async (url) => (await http("GET", `${url}/healthz`)).status === 200,
  });
  try {
    const stream = "rescale-bench";
    const put = await http("PUT", `${server.url}/v1/streams/${stream}`, {
      headers: auth,
      body: JSON.stringify({ key: ["id"], eventTime: "ts", watermarkDelay: "2 hours", partitions: PARTITIONS, volatile: ["v"] }),
    });
    if (put.status !== 201) throw new Error(`PUT: ${put.status} ${put.text}`);
    const url = new URL(`${server.url}/v1/streams/${stream}/events`);
    const t0 = Date.now() - HOUR; // event times from an hour ago: within the 2-hour delay for the whole run
    const total = KEYS_PER_PARTITION * PARTITIONS;
    // Fill: `total` distinct ids in 500-event batches.
    const fillStart = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: FILL_CLIENTS }, async (_, c) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        for (;;) {
          const from = next;
          if (from >= total) break;
          next += FILL_BATCH;
          const rows = Array.from({ length: Math.min(FILL_BATCH, total - from) }, (_, i) => ({ id: `k${from + i}`, ts: t0 + ((from + i) % 1_000), v: 0 }));
          const r = await post(agent, url, JSON.stringify(rows), `fill-${c}-${from}`);
          if (r.status !== 200) throw new Error(`fill: ${r.status} ${r.text.slice(0, 300)}`);
        }
        agent.destroy();
      }),
    );
    console.log(`filled ${fmt(total)} keys over ${PARTITIONS} partitions in ${fmt((performance.now() - fillStart) / 1000, 1)} s`);

    // webhook16 before, during and after the move.
    const samples: Sample[] = [];
    let stop = false;
    let fresh = total;
    let requests = 0;
    const load = Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        let seed = 7 + c;
        const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed / 2 ** 31);
        while (!stop) {
          const repeat = random() < 0.2;
          const n = repeat ? Math.floor(random() * total) : fresh++;
          const body = JSON.stringify({ id: `k${n}`, ts: t0 + (n % 1_000), v: requests });
          const start = performance.now();
          const r = await post(agent, url, body, `w-${c}-${requests++}`);
          if (r.status !== 200) throw new Error(`load: ${r.status} ${r.text.slice(0, 300)}`);
          samples.push({ at: start, ms: performance.now() - start, duplicate: (JSON.parse(r.text) as { duplicates: number }).duplicates === 1, repeat });
        }
        agent.destroy();
      }),
    );
    await sleep(BEFORE_MS);
    const patchAt = performance.now();
    const patch = await http("PATCH", `${server.url}/v1/streams/${stream}`, { headers: auth, body: JSON.stringify({ partitions: TARGET }) });
    if (patch.status !== 202) throw new Error(`PATCH: ${patch.status} ${patch.text}`);
    let moved = 0;
    for (;;) {
      const d = JSON.parse((await http("GET", `${server.url}/v1/streams/${stream}`, { headers: auth })).text) as { rescale?: { keysMoved: number } };
      if (!d.rescale) break;
      moved = d.rescale.keysMoved;
      if (performance.now() - patchAt > MOVE_TIMEOUT_MS) throw new Error("the move did not end in time");
      await sleep(250);
    }
    const doneAt = performance.now();
    await sleep(AFTER_MS);
    stop = true;
    await load;

    const rate = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to).length / ((to - from) / 1000);
    const before = rate(patchAt - BEFORE_MS + 2_000, patchAt); // after 2 s of warm-up
    const during = rate(patchAt, doneAt);
    const pause = Math.max(...samples.filter((s) => s.at >= patchAt && s.at < doneAt).map((s) => s.ms));
    const moveS = (doneAt - patchAt) / 1000;
    const missed = samples.filter((s) => s.repeat && !s.duplicate).length;
    const final = JSON.parse((await http("GET", `${server.url}/v1/streams/${stream}`, { headers: auth })).text) as {
      state: { rows: number };
      config: { partitions: number };
    };
    const result: RescaleResult = {
      keys: total,
      from: PARTITIONS,
      to: TARGET,
      moveSeconds: moveS,
      keysPerSec: total / moveS,
      before,
      during,
      ratio: during / before,
      pauseMs: pause,
      repeats: samples.filter((s) => s.repeat).length,
      missed,
      stateRows: final.state.rows,
      distinctSent: fresh,
      partitionsAfter: final.config.partitions,
    };
    printRescale(result, moved);
    if (missed > 0 || final.state.rows !== fresh || final.config.partitions !== TARGET) throw new Error("the rescale lost or repeated keys");
    return result;
  } finally {
    await server.stop();
  }
}

export function printRescale(r: RescaleResult, movedByLastGet?: number): void {
  const counted = movedByLastGet === undefined ? "" : ` (${fmt(movedByLastGet)} counted by the last GET during the move)`;
  console.log(`moved ${fmt(r.keys)} keys${counted} from ${r.from} to ${r.to} partitions in ${fmt(r.moveSeconds, 1)} s`);
  console.log(`  keys moved per second: ${fmt(r.keysPerSec)}`);
  console.log(`  webhook16 events/s: ${fmt(r.before)} before, ${fmt(r.during)} during (${fmt(r.ratio, 2)}×)`);
  const verdict = (ok: boolean) => (ok ? "PASS" : "WARN");
  console.log(
    `  ${verdict(r.pauseMs <= RESCALE_GOALS.pauseMs)}  longest ingest pause during the move: ${fmt(r.pauseMs)} ms (goal ≤ ${RESCALE_GOALS.pauseMs} ms)`,
  );
  console.log(
    `  ${verdict(r.ratio >= RESCALE_GOALS.duringRatio)}  events/s during the move ÷ before: ${fmt(r.ratio, 2)} (goal ≥ ${RESCALE_GOALS.duringRatio}×)`,
  );
  console.log(`  repeats answered as duplicates: ${fmt(r.repeats - r.missed)} of ${fmt(r.repeats)}`);
  console.log(`  state rows ${fmt(r.stateRows)} (distinct ids sent: ${fmt(r.distinctSent)}), partitions ${r.partitionsAfter}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  measureRescale().catch((e) => {
    console.error(e);
    killEverything();
    process.exit(1);
  });
}

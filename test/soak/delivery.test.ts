/**
 * Soak of delivery (DESIGN §10, issue #30): one stream, one HTTP destination
 * whose handler (node:http on 127.0.0.1) answers 200 after 100 ms, under a
 * steady 30 requests/s of one event each, every key distinct, for
 * SOAK_DELIVERY_MINUTES (default 10), against a real local server on
 * loopback. The destination's lagMs is read every second. Delivery must keep
 * up: the lag levels off (the last third's maximum within 10% of the middle
 * third's, plus an absolute slack for lags of a second or so), and every row
 * reaches the handler at least once within DRAIN_MS after ingest stops.
 * SOAK_DELIVERY_LANES=n sends `"lanes": n` in the destination's PUT (unset:
 * no lanes field, the service's default). Prints the series.
 */
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Outcome, useServer } from "../e2e/server";

const MINUTES = Number(process.env.SOAK_DELIVERY_MINUTES ?? 10);
const LANES = process.env.SOAK_DELIVERY_LANES ? Number(process.env.SOAK_DELIVERY_LANES) : null;
/** Requests per second, all producers together, paced (each request one event, a new key). */
const RATE = 30;
const PRODUCERS = 4;
const HANDLER_MS = 100;
const SAMPLE_MS = 1_000;
/** After ingest stops: every row must have arrived within this. */
const DRAIN_MS = 60_000;
/**
 * Levelled off: last third's max ≤ LEVEL_SHARE × middle third's max + LAG_SLACK_MS.
 * The slack is for small lags: a lag that sits near a few hundred ms moves by
 * a round trip or an alarm's turn from one reading to the next, which is far
 * more than 10% of it and no growth.
 */
const LEVEL_SHARE = 1.1;
const LAG_SLACK_MS = 1_000;
const STREAM = "delivery-soak";
const DESTINATION = "handler";

const { api } = useServer();

/** The handler: notes each row's first arrival (by its event id) and every attempt; answers 200 after HANDLER_MS. */
const arrived = new Map<string, number>();
const webhookIds = new Set<string>();
let attempts = 0;
let handler: HttpServer;

beforeAll(async () => {
  handler = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      attempts++;
      try {
        const id = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data: { id: string } }).data.id;
        if (!arrived.has(id)) arrived.set(id, Date.now());
        webhookIds.add(String(req.headers["webhook-id"]));
      } catch {
        // not a row: counted as an attempt only
      }
      setTimeout(() => res.writeHead(200).end(), HANDLER_MS);
    });
  });
  await new Promise<void>((r) => handler.listen(0, "127.0.0.1", r));
});
afterAll(async () => {
  handler.closeAllConnections();
  await new Promise((r) => handler.close(r));
});

interface Sample {
  t: number;
  lagMs: number;
  pending: number;
  arrived: number;
}

test(`delivery soak: ${MINUTES} min at ${RATE} requests/s to a ${HANDLER_MS} ms handler`, { timeout: MINUTES * 60_000 + DRAIN_MS + 120_000 }, async () => {
  await api.putStream(STREAM, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 4 });
  const port = (handler.address() as AddressInfo).port;
  const body = { type: "http", url: `http://127.0.0.1:${port}/`, timeout: "10 seconds", ...(LANES !== null ? { lanes: LANES } : {}) };
  const path = `/v1/streams/${STREAM}/destinations/${DESTINATION}`;
  const put = await api.request("PUT", path, { body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  expect(put.status, put.text).toBe(201);

  const t0 = Date.now();
  const deadline = t0 + MINUTES * 60_000;
  const sent: string[] = [];
  const samples: Sample[] = [];
  const drainSamples: Sample[] = [];
  let [emitted, errors] = [0, 0];
  /** when the last request was answered: ingest stopped */
  let lastAnswer = t0;

  const producer = async (n: number) => {
    for (let b = 0; Date.now() < deadline; b++) {
      // Paced: request b of producer n is due at t0 + (b × PRODUCERS + n) / RATE seconds (sent at once when late).
      const due = t0 + ((b * PRODUCERS + n) * 1000) / RATE;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      if (Date.now() >= deadline) break;
      const row = { id: `p${n}-${b}`, ts: Date.now() };
      let out: Outcome | null = null;
      for (let attempt = 0; attempt < 5 && !out; attempt++) {
        const res = await api.post(STREAM, row, { batchId: `p${n}-${b}` });
        if (res.status === 200) out = JSON.parse(res.text);
        else errors++;
      }
      if (!out) throw new Error(`request p${n}-${b} failed 5 times`);
      sent.push(row.id);
      emitted += out.emitted;
      lastAnswer = Date.now();
    }
  };
  const read = async (into: Sample[]) => {
    const r = await api.request("GET", path);
    if (r.status !== 200) return;
    const d = JSON.parse(r.text) as { lagMs: number; pending: number };
    into.push({ t: Math.round((Date.now() - t0) / 1000), lagMs: d.lagMs, pending: d.pending, arrived: arrived.size });
  };
  const sampler = async () => {
    for (let k = 1; Date.now() < deadline; k++) {
      await read(samples);
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + k * SAMPLE_MS - Date.now())));
    }
  };
  await Promise.all([...Array.from({ length: PRODUCERS }, (_, n) => producer(n)), sampler()]);
  const stopped = lastAnswer;

  // After ingest: every row at least once, within DRAIN_MS (bounded; read every second meanwhile).
  while (sent.some((id) => !arrived.has(id)) && Date.now() - stopped < DRAIN_MS) {
    await read(drainSamples);
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
  }
  const missing = sent.filter((id) => !arrived.has(id));
  const drainMs = missing.length === 0 ? Math.max(0, Math.max(...sent.map((id) => arrived.get(id)!)) - stopped) : null;
  await api.request("DELETE", path);

  const third = Math.floor(samples.length / 3);
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(2 * third);
  const maxLag = (xs: Sample[]) => Math.max(0, ...xs.map((s) => s.lagMs));
  const elapsed = (stopped - t0) / 1000;
  const compact = (xs: Sample[], f: (s: Sample) => string) => xs.map(f).join(" ");
  console.log(
    [
      `delivery soak: ${elapsed.toFixed(0)} s, ${sent.length} requests (${(sent.length / elapsed).toFixed(1)}/s), ${emitted} emitted, ${errors} errors;` +
        ` ${arrived.size} rows arrived (${webhookIds.size} webhook-ids) in ${attempts} attempts; ` +
        (drainMs === null
          ? `${missing.length} rows missing ${DRAIN_MS / 1000} s after ingest stopped`
          : `all arrived ${(drainMs / 1000).toFixed(1)} s after ingest stopped`),
      `lag s, every ${SAMPLE_MS / 1000} s: ${compact(samples, (s) => (s.lagMs / 1000).toFixed(1))}`,
      `pending: ${compact(samples, (s) => String(s.pending))}`,
      drainSamples.length === 0
        ? "after ingest: nothing left to wait for"
        : `after ingest, lag s: ${compact(drainSamples, (s) => (s.lagMs / 1000).toFixed(1))}; pending: ${compact(drainSamples, (s) => String(s.pending))}`,
      `max lag: middle third ${maxLag(middle)} ms, last third ${maxLag(last)} ms (allowed ≤ ${LEVEL_SHARE} × middle + ${LAG_SLACK_MS} ms)`,
    ].join("\n"),
  );

  expect(errors).toBe(0);
  expect(emitted).toBe(sent.length); // every key distinct: every row emitted
  // The lag levels off instead of growing with the run (delivery keeps up).
  expect(samples.length).toBeGreaterThanOrEqual(9);
  expect(maxLag(last)).toBeLessThanOrEqual(LEVEL_SHARE * maxLag(middle) + LAG_SLACK_MS);
  // At least once: every row reached the handler after ingest stopped.
  expect(missing.slice(0, 10)).toEqual([]);
  expect(webhookIds.size).toBe(sent.length);
});

/**
 * Soak of the bookkeeping (DESIGN §9): a stream with a one-minute idempotency
 * window and a one-minute delay under steady single-event load (webhook-like:
 * one event per request at a steady BOOKKEEPING_SOAK_RATE requests/s (default
 * 30), event time = now, ~20% copies of recent events),
 * against a real local server on loopback, bounded in time
 * (BOOKKEEPING_SOAK_SECONDS, default 660). Its own records and its state must
 * level off — rate × window, rate × retention — instead of growing with the
 * stream's age: the last third's maximum of bookkeeping.bytes and of
 * state.bytes within 10% of the middle third's. Prints the series and writes
 * a chart (SVG, to SOAK_OUT or a temporary directory). The exactly-once
 * checks hold: every distinct event in the output once, nothing late, no error.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, test } from "vitest";
import { type Outcome, rng, useServer } from "../e2e/server";

const SECONDS = Number(process.env.BOOKKEEPING_SOAK_SECONDS ?? 660);
const PRODUCERS = 4;
/** Requests per second, all producers together: steady (paced, below what this machine serves), so that rate × window is one figure. */
const RATE = Number(process.env.BOOKKEEPING_SOAK_RATE ?? 30);
const SAMPLE_MS = 15_000;
const STREAM = "bookkeeping";

const { api } = useServer();

interface Sample {
  t: number;
  bookkeeping: number;
  state: number;
  remembered: number;
  rows: number;
}

/** A line chart of the two byte series over time (SVG). */
function chart(samples: Sample[]): string {
  const W = 760,
    H = 360,
    left = 70,
    right = 20,
    top = 40,
    bottom = 50;
  const maxT = Math.max(...samples.map((s) => s.t), 1);
  const maxY = Math.max(...samples.flatMap((s) => [s.bookkeeping, s.state]), 1);
  const x = (t: number) => left + (t / maxT) * (W - left - right);
  const y = (v: number) => top + (1 - v / maxY) * (H - top - bottom);
  const line = (key: "bookkeeping" | "state", color: string) =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${samples.map((s) => `${x(s.t).toFixed(1)},${y(s[key]).toFixed(1)}`).join(" ")}"/>`;
  const thirds = [1, 2].map(
    (k) => `<line x1="${x((maxT * k) / 3)}" x2="${x((maxT * k) / 3)}" y1="${top}" y2="${H - bottom}" stroke="#ccc" stroke-dasharray="4"/>`,
  );
  return (
    [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
      `<rect width="${W}" height="${H}" fill="white"/>`,
      `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">bookkeeping.bytes and state.bytes under steady load (window 1 min, delay 1 min)</text>`,
      ...thirds,
      `<line x1="${left}" x2="${W - right}" y1="${H - bottom}" y2="${H - bottom}" stroke="#333"/>`,
      `<text x="${left - 6}" y="${top + 4}" text-anchor="end">${(maxY / 2 ** 20).toFixed(1)} MiB</text>`,
      `<text x="${left - 6}" y="${H - bottom + 4}" text-anchor="end">0</text>`,
      `<text x="${W - right}" y="${H - bottom + 18}" text-anchor="end">${maxT} s</text>`,
      line("bookkeeping", "#f38020"),
      line("state", "#3b6ea5"),
      `<rect x="${left}" y="${H - 22}" width="12" height="12" fill="#f38020"/><text x="${left + 18}" y="${H - 12}">bookkeeping.bytes (Coordinator)</text>`,
      `<rect x="${left + 260}" y="${H - 22}" width="12" height="12" fill="#3b6ea5"/><text x="${left + 278}" y="${H - 12}">state.bytes (partitions)</text>`,
      "</svg>",
    ].join("\n") + "\n"
  );
}

test(`bookkeeping soak: ${SECONDS} s of single-event load, 1-minute window and delay`, async () => {
  await api.putStream(STREAM, { key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", partitions: 4, idempotencyWindow: "1 minute" });
  const random = rng(11);
  let next = 0;
  const recent: { id: string; ts: number }[] = [];
  const deadline = Date.now() + SECONDS * 1000;
  const samples: Sample[] = [];
  let requests = 0;
  let errors = 0;
  let emitted = 0;
  let late = 0;
  const t0 = Date.now();

  const event = () => {
    if (recent.length > 0 && random() < 0.2) return recent[Math.floor(random() * recent.length)]; // a provider's redelivery
    const e = { id: `w${next++}`, ts: Date.now() };
    recent.push(e);
    if (recent.length > 200) recent.shift(); // copies of the last few seconds' events
    return e;
  };
  const producer = async (n: number) => {
    for (let b = 0; Date.now() < deadline; b++) {
      // Paced: request b of producer n is due at t0 + (b × PRODUCERS + n) / RATE seconds (sent at once when late).
      const due = t0 + ((b * PRODUCERS + n) * 1000) / RATE;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      if (Date.now() >= deadline) break;
      const row = event();
      let out: Outcome | null = null;
      for (let attempt = 0; attempt < 5 && !out; attempt++) {
        const res = await api.post(STREAM, row, { batchId: `p${n}-${b}` });
        if (res.status === 200) out = JSON.parse(res.text);
        else errors++;
      }
      if (!out) throw new Error(`request p${n}-${b} failed 5 times`);
      requests++;
      emitted += out.emitted;
      late += out.late;
    }
  };
  const sampler = async () => {
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
      const info = await api.stream(STREAM);
      samples.push({
        t: Math.round((Date.now() - t0) / 1000),
        bookkeeping: info.bookkeeping.bytes,
        state: info.state.bytes,
        remembered: info.bookkeeping.batchesRemembered,
        rows: info.state.rows,
      });
    }
  };
  await Promise.all([...Array.from({ length: PRODUCERS }, (_, n) => producer(n)), sampler()]);

  const output = await api.output<{ id: string }>(STREAM);
  const elapsed = (Date.now() - t0) / 1000;
  const dir = process.env.SOAK_OUT ? resolve(process.env.SOAK_OUT) : mkdtempSync(join(tmpdir(), "edge-dedup-soak-"));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "bookkeeping.json"), JSON.stringify({ seconds: elapsed, requests, distinct: next, samples }, null, 2) + "\n");
  writeFileSync(join(dir, "bookkeeping.svg"), chart(samples));
  const third = Math.floor(samples.length / 3);
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(2 * third);
  const maxOf = (xs: Sample[], k: "bookkeeping" | "state") => Math.max(...xs.map((s) => s[k]));
  const kib = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
  console.log(
    [
      `bookkeeping soak: ${elapsed.toFixed(0)} s, ${requests} requests (${(requests / elapsed).toFixed(0)}/s), ${next} distinct events, ${emitted} emitted, ${late} late, ${errors} errors`,
      "   t   bookkeeping.bytes   state.bytes   ids remembered   state rows",
      ...samples.map(
        (s) =>
          `${String(s.t).padStart(4)}   ${kib(s.bookkeeping).padStart(17)}   ${kib(s.state).padStart(11)}   ${String(s.remembered).padStart(14)}   ${String(s.rows).padStart(10)}`,
      ),
      `middle third max: bookkeeping ${kib(maxOf(middle, "bookkeeping"))}, state ${kib(maxOf(middle, "state"))}; last third max: bookkeeping ${kib(maxOf(last, "bookkeeping"))}, state ${kib(maxOf(last, "state"))}`,
      `series: ${join(dir, "bookkeeping.json")}  chart: ${join(dir, "bookkeeping.svg")}`,
    ].join("\n"),
  );

  // Exactly once: every distinct event in the output once; nothing late, nothing failed.
  expect(errors).toBe(0);
  expect(late).toBe(0);
  expect(output.length).toBe(next);
  expect(new Set(output.map((r) => r.id)).size).toBe(next);
  expect(emitted).toBe(next);
  // Levelled off: the last third's maximum within 10% of the middle third's.
  expect(samples.length).toBeGreaterThanOrEqual(9);
  expect(maxOf(last, "bookkeeping")).toBeLessThanOrEqual(1.1 * maxOf(middle, "bookkeeping"));
  expect(maxOf(last, "state")).toBeLessThanOrEqual(1.1 * maxOf(middle, "state"));
  // Ids are forgotten: far fewer remembered than were sent.
  expect(samples.at(-1)!.remembered).toBeLessThan(requests / 3);
});

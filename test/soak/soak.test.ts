/**
 * Soak: sustained batches with duplicates and disorder against a real local
 * server, on loopback, bounded in time (SOAK_SECONDS, default 180). Asserts
 * that state plateaus at about arrival rate × retention (the operator evicts),
 * the Worker's memory (its JS heap, read through the V8 inspector) stays flat,
 * nothing errors, and the output equals the oracle (every distinct event
 * exactly once). Prints its figures.
 */
import { readdirSync, readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { MINUTE, type Outcome, rng, useServer } from "../e2e/server";

const SECONDS = Number(process.env.SOAK_SECONDS ?? 180);
const PRODUCERS = 3;
const BATCH = 200; // rows per batch, ~25% of them copies
// Event time between consecutive events: small enough that what concurrent producers
// send at one moment spans far less than the delay (else their rows would be late).
const SPACING = 50;
const DELAY = 2 * MINUTE;
const STREAM = "soak";

const { server, api } = useServer();

/**
 * Resident memory (kB) of the workerd processes serving this server, split into
 * anonymous memory (heaps: what a leak grows) and file-backed pages (the
 * mapped SQLite files of DO and R2 state, which grow with the data kept).
 */
function workerdRssKb(): { anon: number; file: number } {
  const total = { anon: 0, file: 0 };
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!cmd.includes("workerd") || !cmd.includes("serve")) continue;
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      if (!environ.includes(server.persistDir.replace(/\/state$/, ""))) continue;
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      total.anon += Number(status.match(/RssAnon:\s+(\d+)/)?.[1] ?? 0);
      total.file += Number(status.match(/RssFile:\s+(\d+)/)?.[1] ?? 0) + Number(status.match(/RssShmem:\s+(\d+)/)?.[1] ?? 0);
    } catch {
      // gone, or not ours
    }
  }
  return total;
}

/**
 * The Worker isolate's JS heap in use (bytes), through the V8 inspector. The
 * minimum of a few quick readings approximates the live heap between GCs.
 */
async function jsHeapUsed(inspectorUrl: string): Promise<number> {
  const ws = new WebSocket(inspectorUrl, { headers: { origin: new URL(inspectorUrl.replace("ws:", "http:")).origin } } as never);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("inspector unreachable"));
  });
  const readings: number[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      const reply = new Promise<number>((resolve) => {
        ws.onmessage = (m) => resolve(JSON.parse(String(m.data)).result?.usedSize ?? NaN);
      });
      ws.send(JSON.stringify({ id: i + 1, method: "Runtime.getHeapUsage" }));
      readings.push(await Promise.race([reply, new Promise<number>((r) => setTimeout(() => r(NaN), 2_000))]));
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    ws.close();
  }
  return Math.min(...readings.filter((n) => !Number.isNaN(n)));
}

test(`soak: ${SECONDS} s of sustained load`, async () => {
  await api.putStream(STREAM, { key: ["id"], eventTime: "ts", watermarkDelay: DELAY, partitions: 8 });
  const random = rng(7);
  const start = Date.UTC(2024, 0, 1);
  let next = 0; // next fresh event number
  const recent: { id: string; ts: number }[] = [];
  const deadline = Date.now() + SECONDS * 1000;
  const samples: { t: number; rows: number; rss: { anon: number; file: number }; heap: number; watermark: number }[] = [];
  let batches = 0;
  let errors = 0;
  let emitted = 0;
  let late = 0;
  const t0 = Date.now();

  const makeBatch = () => {
    const rows: { id: string; ts: number }[] = [];
    for (let i = 0; i < BATCH; i++) {
      if (recent.length > 0 && random() < 0.25) {
        rows.push(recent[Math.floor(random() * recent.length)]); // a copy of a recent event
      } else {
        const e = { id: `e${next}`, ts: start + next * SPACING + Math.round((random() - 0.5) * 10_000) };
        next++;
        rows.push(e);
        recent.push(e);
        if (recent.length > 500) recent.shift(); // copies come from the last ~25 s of event time
      }
    }
    return rows;
  };

  const producer = async (n: number) => {
    for (let b = 0; Date.now() < deadline; b++) {
      const rows = makeBatch();
      const batchId = `p${n}-b${b}`;
      let out: Outcome | null = null;
      for (let attempt = 0; attempt < 5 && !out; attempt++) {
        const res = await api.post(STREAM, rows, { batchId, source: `p${n}` });
        if (res.status === 200) out = JSON.parse(res.text);
        else errors++;
      }
      if (!out) throw new Error(`batch ${batchId} failed 5 times`);
      expect(out.emitted + out.duplicates + out.late + out.rejected.length).toBe(out.input);
      batches++;
      emitted += out.emitted;
      late += out.late;
    }
  };
  const sampler = async () => {
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10_000));
      const info = await api.stream(STREAM);
      const heap = await jsHeapUsed(server.inspectorUrl);
      samples.push({ t: Math.round((Date.now() - t0) / 1000), rows: info.state.rows, rss: workerdRssKb(), heap, watermark: info.watermark });
    }
  };
  await Promise.all([...Array.from({ length: PRODUCERS }, (_, n) => producer(n)), sampler()]);

  const output = await api.output<{ id: string; ts: number }>(STREAM);
  const ids = new Set(output.map((r) => r.id));
  const elapsed = (Date.now() - t0) / 1000;
  // Retention ≈ 2 × delay of event time for within-watermark; plus the spread of the sources.
  const expectedRows = (2 * DELAY) / SPACING;
  const settled = samples.filter((s) => s.t >= 40);
  console.log(
    [
      `soak: ${elapsed.toFixed(0)} s, ${batches} batches, ${((batches * BATCH) / elapsed).toFixed(0)} rows/s in, ${next} distinct events, ${emitted} emitted, ${late} late, ${errors} errors`,
      `state rows (expected plateau ≈ ${expectedRows}):`,
      ...samples.map(
        (s) =>
          `  t=${s.t}s rows=${s.rows} JS heap=${(s.heap / 2 ** 20).toFixed(1)} MiB workerd RSS anon=${(s.rss.anon / 1024).toFixed(0)} MiB file=${(s.rss.file / 1024).toFixed(0)} MiB`,
      ),
    ].join("\n"),
  );

  expect(errors).toBe(0);
  expect(late).toBe(0);
  expect(output.length).toBe(next); // the oracle: every distinct event exactly once
  expect(ids.size).toBe(next);
  expect(emitted).toBe(next);
  // The operator evicts: state stays near arrival rate × retention instead of growing with the stream.
  expect(next).toBeGreaterThan(expectedRows * 3);
  for (const s of settled) {
    expect(s.rows).toBeLessThan(expectedRows * 1.5);
    expect(s.rows).toBeGreaterThan(expectedRows * 0.5);
  }
  // Memory stays flat: the Worker's JS heap (what the 128 MB isolate limit applies to)
  // shows no trend. The workerd process's RSS also holds the local runtime's own
  // storage emulation; it is printed above, not asserted.
  const heaps = settled.map((s) => s.heap).filter((h) => Number.isFinite(h));
  expect(heaps.length).toBeGreaterThanOrEqual(2);
  const third = Math.max(1, Math.floor(heaps.length / 3));
  expect(Math.max(...heaps.slice(-third))).toBeLessThan(Math.max(...heaps.slice(0, third)) + 32 * 2 ** 20);
  for (const h of heaps) expect(h).toBeLessThan(96 * 2 ** 20);
});

/**
 * State survives a restart on the same --persist-to directory, whether wrangler
 * is stopped gracefully (SIGTERM) or its whole process group is killed
 * (SIGKILL, a crash): keys, output, progress, watermarks, ledger. A crash with
 * batches in flight loses nothing and duplicates nothing once they are retried.
 */
import { describe, expect, test } from "vitest";
import { at, MINUTE, type Outcome, pollUntil, type StopSignal, useServer } from "./server";

const { server, api } = useServer({ faults: true });

const config = { key: ["id"], eventTime: "ts", watermarkDelay: "30 minutes", partitions: 4 };
const rowsAt = (prefix: string, n: number, ts: number, from = 0) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${from + i}`, ts, n: from + i }));

async function survives(signal: StopSignal) {
  const s = `restart-${signal.toLowerCase()}`;
  await api.putStream(s, config);
  const b1 = await api.ingest(s, rowsAt("k", 20, at(10)), { batchId: "b-1" });
  expect(b1.emitted).toBe(20);
  const b2Rows = [...rowsAt("k", 10, at(10, 20), 20), { id: "k0", ts: at(10, 1), n: 0 }];
  const b2 = await api.ingest(s, b2Rows, { batchId: "b-2", source: "other" });
  // min over the two sources that have spoken: default (10:00) and other (10:20), minus 30 minutes
  expect(b2).toMatchObject({ emitted: 10, duplicates: 1, late: 0, watermarkAfter: at(9, 30) });

  const before = await api.snapshot(s);
  expect(before.rows).toBe(30);
  expect(before.committed).toBe(2);
  expect(before.output.split("\n").filter(Boolean)).toHaveLength(30);

  const startsBefore = server.starts;
  await server.restart(signal);
  expect(server.starts).toBe(startsBefore + 1);

  const after = await api.snapshot(s);
  expect(after).toEqual(before);

  // A copy of a key seen before the restart is still a duplicate; its batch ids still replay.
  const dup = await api.ingest(s, [{ id: "k5", ts: at(10, 5), n: 5 }]);
  expect(dup).toMatchObject({ input: 1, emitted: 0, duplicates: 1, late: 0, replayed: false, watermark: at(9, 30) });
  expect(await api.ingest(s, b2Rows, { batchId: "b-2", source: "other" })).toEqual({ ...b2, replayed: true });
  expect(await api.ingest(s, rowsAt("k", 20, at(10)), { batchId: "b-1" })).toEqual({ ...b1, replayed: true });
  expect(await api.outputText(s)).toBe(before.output);
  return { s, before };
}

describe("restart on the same persisted state", () => {
  test("graceful stop (SIGTERM): keys, output, progress and watermark survive", async () => {
    await survives("SIGTERM");
  });

  test("crash (SIGKILL of the process group): the same, and a pending eviction still happens", async () => {
    const { s, before } = await survives("SIGKILL");

    // Move the watermark so that k0..k19 (10:00 + 30 min) expire at equality, then crash at once.
    const mover = await api.ingest(s, [{ id: "mover", ts: at(11), n: -1 }], { batchId: "b-mover" });
    expect(mover.watermarkAfter).toBe(at(9, 50)); // other still at 10:20
    const mover2 = await api.ingest(s, [{ id: "mover2", ts: at(11), n: -2 }], { batchId: "b-mover2", source: "other" });
    expect(mover2.watermarkAfter).toBe(at(10, 30));
    await server.restart("SIGKILL");

    // The eviction that the commit scheduled runs after the crash too (alarms persist).
    const info = await pollUntil(
      () => api.stream(s),
      (i) => i.state.rows === 12,
      8_000,
    );
    expect(info.watermark).toBe(at(10, 30));
    expect(info.state.rows).toBe(12); // k20..k29 (expire 10:50), mover and mover2
    const again = await api.ingest(s, [
      { id: "k0", ts: at(10, 31), n: 0 },
      { id: "k20", ts: at(10, 31), n: 20 },
      { id: "mover", ts: at(11, 1), n: -1 },
    ]);
    expect(again).toMatchObject({ watermark: at(10, 30), emitted: 1, duplicates: 2, late: 0 });
    const output = await api.output<{ id: string }>(s);
    expect(output.length).toBe(before.output.split("\n").filter(Boolean).length + 3);
    expect(output.slice(-3).map((r) => r.id)).toEqual(["mover", "mover2", "k0"]);
  });

  test("failures at each crash point, then a crash with batches in flight: retrying every batch id gives each row exactly once", async () => {
    const s = "crash-inflight";
    await api.putStream(s, config);
    // Sixteen batches, 400 distinct keys each, plus 50 keys shared by all of them; event times
    // within 10 minutes of each other (delay 30 minutes), so nothing can be late or evicted.
    // The first four first fail at each named crash point (500); the other twelve are in flight
    // when the process group is SIGKILLed. Then every batch id is retried.
    const FAULTS = ["after-decide", "after-data", "after-marker", "partition-midway"];
    const batches = Array.from({ length: 16 }, (_, b) => ({
      id: b < FAULTS.length ? `fault-${FAULTS[b]}` : `inflight-${b}`,
      source: `src${b % 3}`,
      rows: [
        ...Array.from({ length: 400 }, (_, i) => ({ id: `b${b}-${i}`, ts: at(11) + ((b * 400 + i) % 600) * 1000, batch: b })),
        ...Array.from({ length: 50 }, (_, i) => ({ id: `shared-${i}`, ts: at(11, 5) + b * 1000, batch: b })),
      ],
    }));
    const expectedKeys = new Set(batches.flatMap((b) => b.rows.map((r) => r.id)));

    for (const [i, fault] of FAULTS.entries()) {
      const b = batches[i];
      const res = await api.post(s, b.rows, { batchId: b.id, source: b.source, headers: { "x-test-fault": fault } });
      expect(res.status, `${fault}: ${res.text}`).toBe(500);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    }
    // Nothing of the failed batches is visible.
    expect(await api.outputText(s)).toBe("");
    expect((await api.stream(s)).batches.committed).toBe(0);

    const first = new Map<string, Outcome>();
    let firstDone!: () => void;
    const anyDone = new Promise<void>((r) => (firstDone = r));
    const inflight = batches.slice(FAULTS.length).map(async (b) => {
      try {
        const res = await api.post(s, b.rows, { batchId: b.id, source: b.source });
        if (res.status === 200) first.set(b.id, JSON.parse(res.text));
      } catch {
        // the connection died with the server
      } finally {
        firstDone();
      }
    });
    await Promise.race([anyDone, new Promise((r) => setTimeout(r, 3_000))]);
    await server.stop("SIGKILL");
    await Promise.all(inflight);
    console.log(`crash-inflight: ${first.size} of ${batches.length - FAULTS.length} batches had answered 200 before the crash`);
    await server.restart("SIGKILL");

    // Retry every batch with the same id, one after another.
    const final = new Map<string, Outcome>();
    for (const b of batches) {
      const o = await api.ingest(s, b.rows, { batchId: b.id, source: b.source });
      expect(o.input).toBe(b.rows.length);
      expect(o.emitted + o.duplicates + o.late + o.rejected.length).toBe(o.input);
      expect(o.late).toBe(0);
      const earlier = first.get(b.id);
      if (earlier) expect(o).toEqual({ ...earlier, replayed: true });
      final.set(b.id, o);
    }

    const output = await api.output<{ id: string; batch: number }>(s);
    const seen = new Map<string, number>();
    for (const r of output) seen.set(r.id, (seen.get(r.id) ?? 0) + 1);
    const repeated = [...seen].filter(([, n]) => n > 1);
    expect(repeated, "keys emitted more than once").toEqual([]);
    expect(
      [...expectedKeys].filter((k) => !seen.has(k)),
      "keys lost",
    ).toEqual([]);
    expect(output.length).toBe(expectedKeys.size);
    // Each batch's emitted count matches its rows in the output.
    for (const b of batches) {
      expect(output.filter((r) => r.batch === batches.indexOf(b)).length, b.id).toBe(final.get(b.id)!.emitted);
    }
    const info = await api.stream(s);
    expect(info.batches.committed).toBe(batches.length);
    expect(info.state.rows).toBe(expectedKeys.size);
    expect((await api.progress(s)).length).toBe(batches.length);
    // Undeclared sources join as they first commit and the watermark never goes back,
    // so it is the highest watermarkAfter of any commit, between min and max over the sources.
    expect(info.watermark).toBe(Math.max(...[...final.values()].map((o) => o.watermarkAfter)));
    const maxBySource = new Map<string, number>();
    for (const b of batches) maxBySource.set(b.source, Math.max(maxBySource.get(b.source) ?? 0, ...b.rows.map((r) => r.ts)));
    expect(info.watermark).toBeGreaterThanOrEqual(Math.min(...maxBySource.values()) - 30 * MINUTE);
    expect(info.watermark).toBeLessThanOrEqual(Math.max(...maxBySource.values()) - 30 * MINUTE);
  });
});

/**
 * DESIGN §2.1-2.4 over HTTP: per-source watermarks, the global watermark under
 * the `min` and `max` policies, declared sources that have not spoken, and
 * per-source delays.
 */
import { describe, expect, test } from "vitest";
import { at, type Outcome, useServer } from "./server";

const { server, api } = useServer();

const DELAY = "10 minutes";
const row = (id: string, ts: number) => ({ id, ts });

function counts(o: Outcome) {
  return { input: o.input, emitted: o.emitted, duplicates: o.duplicates, late: o.late, rejected: o.rejected.length };
}

async function outputIds(stream: string): Promise<string[]> {
  return (await api.output<{ id: string }>(stream)).map((r) => r.id);
}

describe("two declared sources", () => {
  test("min: a declared source that never sends holds the watermark at 0, so nothing is late; then it is the min", async () => {
    const s = "wm-min";
    expect((await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: DELAY, partitions: 2, sources: { a: {}, b: {} } })).status).toBe(201);

    // Only a sends, its event times advancing over hours.
    for (const [i, t] of [at(10), at(12), at(14)].entries()) {
      const o = await api.ingest(s, [row(`a${i}`, t)], { source: "a" });
      expect(o.watermark).toBe(0);
      expect(o.watermarkAfter).toBe(0);
      expect(counts(o)).toEqual({ input: 1, emitted: 1, duplicates: 0, late: 0, rejected: 0 });
    }
    let info = await api.stream(s);
    expect(info.watermark).toBe(0);
    expect(info.sources.a).toMatchObject({ maxEventTime: at(14), watermark: at(13, 50) });
    expect(info.sources.b).toMatchObject({ maxEventTime: null, watermark: 0, lastBatchAt: null });

    // Nothing is late while b is silent, not even a row hours behind a; and no key was evicted.
    const old = await api.ingest(s, [row("a-old", at(9)), row("a0", at(10))], { source: "a" });
    expect(old.watermark).toBe(0);
    expect(counts(old)).toEqual({ input: 2, emitted: 1, duplicates: 1, late: 0, rejected: 0 });

    // b speaks: the global watermark is the min of the two.
    const b1 = await api.ingest(s, [row("b1", at(11))], { source: "b" });
    expect(b1.watermark).toBe(0);
    expect(b1.watermarkAfter).toBe(at(10, 50)); // min(14:00, 11:00) - 10 min
    info = await api.stream(s);
    expect(info.watermark).toBe(at(10, 50));
    expect(info.sources.b).toMatchObject({ maxEventTime: at(11), watermark: at(10, 50) });
    expect(info.sources.a).toMatchObject({ maxEventTime: at(14), watermark: at(13, 50) });

    // Judged by the new watermark: T == wm is late, one ms later is not; a's copy of a2 is still a duplicate.
    const a = await api.ingest(s, [row("a-eq", at(10, 50)), row("a-after", at(10, 50) + 1), row("a2", at(14))], { source: "a" });
    expect(a.watermark).toBe(at(10, 50));
    expect(counts(a)).toEqual({ input: 3, emitted: 1, duplicates: 1, late: 1, rejected: 0 });
    expect(a.watermarkAfter).toBe(at(10, 50));

    // A late row from b still counts toward b's max event time, but an older one never lowers anything.
    const bOld = await api.ingest(s, [row("b-old", at(8))], { source: "b" });
    expect(counts(bOld)).toEqual({ input: 1, emitted: 0, duplicates: 0, late: 1, rejected: 0 });
    expect(bOld.watermarkAfter).toBe(at(10, 50));
    info = await api.stream(s);
    expect(info.watermark).toBe(at(10, 50));
    expect(info.sources.b.maxEventTime).toBe(at(11));

    // b overtakes a: now a is the minimum.
    const b2 = await api.ingest(s, [row("b2", at(15))], { source: "b" });
    expect(b2.watermarkAfter).toBe(at(13, 50));
    expect((await api.stream(s)).watermark).toBe(at(13, 50));

    expect(await outputIds(s)).toEqual(["a0", "a1", "a2", "a-old", "b1", "a-after", "b2"]);
  });

  test("max: the watermark follows the leading source even while a declared one is silent", async () => {
    const s = "wm-max";
    await api.putStream(s, {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: DELAY,
      partitions: 2,
      watermarkPolicy: "max",
      sources: { a: {}, b: {} },
    });

    const a1 = await api.ingest(s, [row("a1", at(10))], { source: "a" });
    expect(a1.watermark).toBe(0);
    expect(a1.watermarkAfter).toBe(at(9, 50));
    let info = await api.stream(s);
    expect(info.watermark).toBe(at(9, 50));
    expect(info.sources.b).toMatchObject({ maxEventTime: null, watermark: 0 });

    const a2 = await api.ingest(s, [row("a2", at(12))], { source: "a" });
    expect(a2.watermark).toBe(at(9, 50));
    expect(a2.watermarkAfter).toBe(at(11, 50));

    // b is judged by a's watermark: behind it is late, even though b itself is far behind.
    // A batch of late rows only still counts toward b's max event time (§2.1).
    const bLate = await api.ingest(s, [row("b-late", at(11, 30))], { source: "b" });
    expect(counts(bLate)).toEqual({ input: 1, emitted: 0, duplicates: 0, late: 1, rejected: 0 });
    info = await api.stream(s);
    expect(info.sources.b).toMatchObject({ maxEventTime: at(11, 30), watermark: at(11, 20) });
    expect(info.watermark).toBe(at(11, 50));

    const b = await api.ingest(s, [row("b-eq", at(11, 50)), row("b-ok", at(11, 51))], { source: "b" });
    expect(b.watermark).toBe(at(11, 50));
    expect(counts(b)).toEqual({ input: 2, emitted: 1, duplicates: 0, late: 1, rejected: 0 });
    expect(b.watermarkAfter).toBe(at(11, 50)); // max(11:50, 11:41)
    info = await api.stream(s);
    expect(info.sources.b).toMatchObject({ maxEventTime: at(11, 51), watermark: at(11, 41) });
    expect(info.watermark).toBe(at(11, 50));

    // A duplicate counts toward its source's max event time too: a copy of a2 (12:00, still remembered) at 12:30.
    const aDup = await api.ingest(s, [row("a2", at(12, 30))], { source: "a" });
    expect(counts(aDup)).toEqual({ input: 1, emitted: 0, duplicates: 1, late: 0, rejected: 0 });
    expect(aDup.watermarkAfter).toBe(at(12, 20));
    expect((await api.stream(s)).sources.a.maxEventTime).toBe(at(12, 30));

    // Now b leads.
    const b2 = await api.ingest(s, [row("b2", at(14))], { source: "b" });
    expect(b2.watermarkAfter).toBe(at(13, 50));
    expect((await api.stream(s)).watermark).toBe(at(13, 50));

    expect(await outputIds(s)).toEqual(["a1", "a2", "b-ok", "b2"]);
  });

  test("a source's own watermarkDelay is honored, and a policy change never moves the watermark back", async () => {
    const s = "wm-source-delay";
    const body = { key: ["id"], eventTime: "ts", watermarkDelay: DELAY, partitions: 2, sources: { a: {}, b: { watermarkDelay: "1 hour" } } };
    await api.putStream(s, body);

    expect((await api.ingest(s, [row("a1", at(12))], { source: "a" })).watermarkAfter).toBe(0);
    const b1 = await api.ingest(s, [row("b1", at(12))], { source: "b" });
    expect(b1.watermarkAfter).toBe(at(11)); // min(12:00 - 10 min, 12:00 - 1 hour)
    let info = await api.stream(s);
    expect(info.sources.a).toMatchObject({ maxEventTime: at(12), watermark: at(11, 50) });
    expect(info.sources.b).toMatchObject({ maxEventTime: at(12), watermark: at(11) });
    expect(info.watermark).toBe(at(11));

    const a2 = await api.ingest(s, [row("a-eq", at(11)), row("a-ok", at(11, 0, 1))], { source: "a" });
    expect(a2.watermark).toBe(at(11));
    expect(counts(a2)).toEqual({ input: 2, emitted: 1, duplicates: 0, late: 1, rejected: 0 });

    // Policy is mutable: max moves the watermark up to a's 11:50 ...
    const toMax = await api.putStream(s, { ...body, watermarkPolicy: "max" });
    expect(toMax.status).toBe(200);
    expect(toMax.json.status).toBe("updated");
    expect((await api.stream(s)).watermark).toBe(at(11, 50));
    // ... and going back to min does not move it back down.
    await api.putStream(s, { ...body, watermarkPolicy: "min" });
    info = await api.stream(s);
    expect(info.config.watermarkPolicy).toBe("min");
    expect(info.watermark).toBe(at(11, 50));
    const late = await api.ingest(s, [row("a-late", at(11, 50))], { source: "a" });
    expect(late.watermark).toBe(at(11, 50));
    expect(late.late).toBe(1);

    expect(await outputIds(s)).toEqual(["a1", "b1", "a-ok"]);
  });
});

describe("which copy survives", () => {
  test("the first copy in processing order, not the earliest event time; key columns may include the event time", async () => {
    const s = "first-copy";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: DELAY, partitions: 2 });
    const o = await api.ingest(s, [
      { id: "x", ts: at(10, 5), copy: 1 },
      { id: "x", ts: at(10), copy: 2 },
      { id: "y", ts: at(10), copy: 1 },
    ]);
    expect(counts(o)).toEqual({ input: 3, emitted: 2, duplicates: 1, late: 0, rejected: 0 });
    // Watermark 09:55 now: a copy at 10:00 is not late, and x (expires 10:15) is still remembered.
    expect(counts(await api.ingest(s, [{ id: "x", ts: at(10), copy: 3 }]))).toEqual({ input: 1, emitted: 0, duplicates: 1, late: 0, rejected: 0 });
    expect(await api.output(s)).toEqual([
      { id: "x", ts: at(10, 5), copy: 1 },
      { id: "y", ts: at(10), copy: 1 },
    ]);
    // The key is remembered with the event time of the copy that was emitted.
    const keys = (await api.allState(s, 2)).flatMap((p) => p.keys).filter((k) => k.key === '["x"]');
    expect(keys).toEqual([{ key: '["x"]', eventTime: at(10, 5), expiresAt: at(10, 15) }]);

    const s2 = "key-with-time";
    await api.putStream(s2, { key: ["id", "ts"], eventTime: "ts", watermarkDelay: DELAY, partitions: 2, schema: { ts: "timestamp" } });
    const o2 = await api.ingest(s2, [
      { id: "x", ts: at(10) },
      { id: "x", ts: at(10, 1) },
      { id: "x", ts: at(10) },
    ]);
    expect(counts(o2)).toEqual({ input: 3, emitted: 2, duplicates: 1, late: 0, rejected: 0 });
  });
});

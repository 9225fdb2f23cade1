import { describe, expect, test } from "vitest";
import { ClockState } from "../../../src/clock/clock-state";
import type { ClockReport } from "../../../src/clock/report";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";

const config = (body: Record<string, unknown> = {}): StreamConfig => {
  const r = parseStreamConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", shards: 3, ...body });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.config;
};
const MIN = 60_000;

function report(shard: number, sources: ClockReport["sources"], extra: Partial<ClockReport> = {}): ClockReport {
  return { stream: "s", epoch: "e1", incarnation: 1, shard, shards: 3, configVersion: 1, sources, pending: {}, applied: 0, ...extra };
}

describe("a stream's clock (src/clock/clock-state.ts)", () => {
  test("asks for the config it lacks, then answers the global watermark over every shard's report", () => {
    const clock = ClockState.fresh("s", { epoch: "e1", incarnation: 1 }, 3, 100);
    expect(clock.exchange(report(1, {}), 0).answer).toEqual({ kind: "config" });
    const a = clock.exchange(report(1, { a: { maxEventTime: 10 * MIN, lastBatchAt: 0 } }, { config: config() }), 0);
    expect(a).toEqual({ answer: { kind: "ok", watermark: 9 * MIN, known: ["a"] }, grew: true });
    // Another shard's sources join; a min waits for the slower one.
    const b = clock.exchange(report(2, { a: { maxEventTime: 12 * MIN, lastBatchAt: 0 }, b: { maxEventTime: 5 * MIN, lastBatchAt: 0 } }), 0);
    expect(b.answer).toEqual({ kind: "ok", watermark: 9 * MIN, known: ["a", "b"] });
    const c = clock.exchange(report(0, { b: { maxEventTime: 20 * MIN, lastBatchAt: 0 } }), 0);
    expect(c).toEqual({ answer: { kind: "ok", watermark: 11 * MIN, known: ["a", "b"] }, grew: false });
    // A source only pending in a shard is counted, but not told as known: its batch may fail.
    const p = clock.exchange(report(1, { a: { maxEventTime: 12 * MIN, lastBatchAt: 0 } }, { pending: { z: 2 * MIN } }), 0);
    expect(p).toEqual({ answer: { kind: "ok", watermark: 11 * MIN, known: ["a", "b"] }, grew: true });
    // A newer config version is asked for; an older report's version is not.
    expect(clock.exchange(report(0, {}, { configVersion: 2 }), 0).answer).toEqual({ kind: "config" });
    expect(
      clock.exchange(report(0, { b: { maxEventTime: 20 * MIN, lastBatchAt: 0 } }, { configVersion: 2, config: config({ watermarkDelay: "2 minutes" }) }), 0)
        .answer,
    ).toMatchObject({
      watermark: 11 * MIN, // never back
    });
  });

  test("knows which shards judge by an older watermark; what it told them, and the lowest applied", () => {
    const clock = ClockState.fresh("s", { epoch: "e1", incarnation: 1 }, 3, 100);
    clock.exchange(report(0, { a: { maxEventTime: 10 * MIN, lastBatchAt: 0 } }, { config: config() }), 1_000);
    // Shards 1 and 2 never asked: they are behind, and told once an interval has passed for them (at once: never heard).
    expect(clock.lagging(1_000)).toEqual([1, 2]);
    expect(clock.reading(1_000)).toMatchObject({ watermark: 9 * MIN, applied: 0 });
    clock.told(1, 9 * MIN);
    expect(clock.lagging(1_000)).toEqual([2]);
    clock.exchange(report(2, {}), 1_050);
    expect(clock.lagging(1_060)).toEqual([]);
    expect(clock.reading(1_060)).toMatchObject({ watermark: 9 * MIN, applied: 9 * MIN, sources: { a: { maxEventTime: 10 * MIN, lastBatchAt: 0 } } });
    // A move that a recent asker has not heard of yet: told only once an interval has passed since it asked.
    clock.exchange(report(0, { a: { maxEventTime: 15 * MIN, lastBatchAt: 0 } }), 1_080);
    expect(clock.lagging(1_100)).toEqual([1]);
    expect(clock.lagging(1_150)).toEqual([1, 2]);
  });

  test("a shard-count change: new shards are told before they first report; shards taking no batches are neither told nor hold back the lowest applied, and their sources still count", () => {
    const clock = ClockState.fresh("s", { epoch: "e1", incarnation: 1 }, 3, 100);
    clock.exchange(report(2, { a: { maxEventTime: 10 * MIN, lastBatchAt: 0 } }, { config: config() }), 1_000);
    for (const k of [0, 1]) clock.told(k, 9 * MIN);
    expect(clock.lagging(1_000)).toEqual([]);
    // 3 → 5: shards 3 and 4 have never reported, and are told at once.
    clock.configure(2, config({ shards: 5 }));
    expect(clock.lagging(1_000)).toEqual([3, 4]);
    expect(clock.reading(1_000).applied).toBe(0);
    for (const k of [3, 4]) clock.told(k, 9 * MIN);
    // 5 → 2: shards 2–4 take no batches; the watermark moves on shard 0's report and only shard 1 is behind.
    clock.configure(3, { ...config({ shards: 5 }), intakeShards: 2 });
    clock.exchange(report(0, { a: { maxEventTime: 12 * MIN, lastBatchAt: 0 } }, { shards: 5, configVersion: 3 }), 1_200);
    expect(clock.lagging(1_300)).toEqual([1]);
    clock.told(1, 11 * MIN);
    expect(clock.reading(1_300)).toMatchObject({ watermark: 11 * MIN, applied: 11 * MIN });
    // Shard 2's last report still counts for its source (a max over the shards).
    clock.exchange(report(0, { b: { maxEventTime: 30 * MIN, lastBatchAt: 0 } }, { shards: 5, configVersion: 3 }), 1_400);
    expect(clock.reading(1_400).sources.a.maxEventTime).toBe(10 * MIN);
  });

  test("a source turns idle an interval later than its timeout, and then lets the watermark go", () => {
    const clock = ClockState.fresh("s", { epoch: "e1", incarnation: 1 }, 2, 100);
    const c = config({ idleTimeout: "1 second" });
    clock.exchange(report(0, { a: { maxEventTime: 10 * MIN, lastBatchAt: 0 }, b: { maxEventTime: 2 * MIN, lastBatchAt: 0 } }, { config: c }), 0);
    expect(clock.advance(500)).toBe(1 * MIN);
    clock.exchange(report(1, { a: { maxEventTime: 10 * MIN, lastBatchAt: 1_000 } }), 1_000);
    expect(clock.advance(1_050)).toBe(1 * MIN); // b's timeout has passed, the interval not
    expect(clock.advance(1_100)).toBe(9 * MIN);
  });
});

/**
 * The commit's log line and data point (src/instrument/observe.ts): by default at most one line a
 * second, the commits of that second summed (src/instrument/commit-log.ts); COMMIT_LOG=each writes
 * one per commit, COMMIT_LOG=off none; the data point is written for every commit in every mode.
 */
import { afterEach, expect, test, vi } from "vitest";
import { CommitObserver } from "../../../src/instrument/observe";
import type { CommittedFigures } from "../../../src/stream/metrics";

const figures = (emitted: number, duplicates: number, durationMs = 5): CommittedFigures[] => [
  { source: "default", emitted, duplicates, late: 0, rejected: 0, durationMs },
];

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

function observing(env: { COMMIT_LOG?: string }) {
  const lines: Record<string, unknown>[] = [];
  vi.spyOn(console, "log").mockImplementation((l: string) => void lines.push(JSON.parse(l)));
  const points: { doubles: number[] }[] = [];
  const observer = new CommitObserver({ ...env, ANALYTICS: { writeDataPoint: (p) => void points.push(p) } });
  return { observer, lines, points };
}

test("a commit logs one JSON line with its figures, and writes one data point", () => {
  const { observer, lines, points } = observing({});
  observer.commit("orders", figures(1, 1), 0, 10);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ stream: "orders", batches: 1, emitted: 1, duplicates: 1, watermark: 0, watermarkAfter: 10 });
  expect(points).toHaveLength(1);
});

test("COMMIT_LOG=off: no line, the data point still", () => {
  const off = observing({ COMMIT_LOG: "off" });
  off.observer.commit("orders", figures(1, 1), 0, 10);
  expect(off.lines).toEqual([]);
  expect(off.points).toHaveLength(1);
  vi.restoreAllMocks();
  const on = observing({ COMMIT_LOG: "on" });
  on.observer.commit("orders", figures(1, 1), 0, 10);
  expect(on.lines).toHaveLength(1);
});

test("commits within a second of a line are summed into one line, written when the second ends; each keeps its data point", () => {
  vi.useFakeTimers({ now: 1_000_000 });
  const { observer, lines, points } = observing({});
  observer.commit("orders", figures(2, 0, 4), 0, 10, Date.now());
  vi.advanceTimersByTime(100);
  observer.commit("orders", figures(3, 1, 9), 10, 20, Date.now());
  vi.advanceTimersByTime(100);
  observer.commit("orders", figures(1, 2, 6), 20, 30, Date.now());
  expect(lines).toHaveLength(1); // the first, at once
  expect(points).toHaveLength(3);
  vi.advanceTimersByTime(799);
  expect(lines).toHaveLength(1);
  vi.advanceTimersByTime(1);
  expect(lines).toHaveLength(2);
  expect(lines[1]).toEqual({
    stream: "orders",
    commits: 2,
    batches: 2,
    emitted: 4,
    duplicates: 3,
    late: 0,
    rejected: 0,
    watermark: 10,
    watermarkAfter: 30,
    durationMs: 9,
  });
  // Nothing held: no more lines, and a commit after a quiet second is written at once.
  vi.advanceTimersByTime(5_000);
  expect(lines).toHaveLength(2);
  observer.commit("orders", figures(1, 0), 30, 40, Date.now());
  expect(lines).toHaveLength(3);
  expect(lines[2]).toMatchObject({ commits: 1, emitted: 1, watermark: 30, watermarkAfter: 40 });
});

test("COMMIT_LOG=each: a line for every commit, however close", () => {
  vi.useFakeTimers({ now: 1_000_000 });
  const { observer, lines } = observing({ COMMIT_LOG: "each" });
  for (let i = 0; i < 3; i++) observer.commit("orders", figures(1, 0), i, i + 1, Date.now());
  expect(lines.map((l) => l.watermark)).toEqual([0, 1, 2]);
  expect(lines[0]).not.toHaveProperty("commits");
});

test("flush writes the held line at once (a stream being deleted), and the timer then writes nothing more", () => {
  vi.useFakeTimers({ now: 1_000_000 });
  const { observer, lines } = observing({});
  observer.commit("orders", figures(1, 0), 0, 1, Date.now());
  observer.commit("orders", figures(5, 0), 1, 2, Date.now());
  observer.flush();
  expect(lines.map((l) => l.emitted)).toEqual([1, 5]);
  vi.advanceTimersByTime(2_000);
  expect(lines).toHaveLength(2);
});

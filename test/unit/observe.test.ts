/** The commit's log line and data point (src/instrument/observe.ts): COMMIT_LOG=off leaves the line out, never the data point. */
import { afterEach, expect, test, vi } from "vitest";
import { observeCommit } from "../../src/instrument/observe";

const done = [{ batchId: "b1", source: "default", replayed: false, watermark: 0, watermarkAfter: 10, input: 2, emitted: 1, duplicates: 1, late: 0, conflicts: 0, rejected: 0, durationMs: 5 }];

afterEach(() => vi.restoreAllMocks());

function observed(env: { COMMIT_LOG?: string }) {
  const lines: string[] = [];
  vi.spyOn(console, "log").mockImplementation((l: string) => void lines.push(l));
  const points: unknown[] = [];
  observeCommit({ ...env, ANALYTICS: { writeDataPoint: (p) => void points.push(p) } }, "orders", done as never, 0, 10);
  return { lines, points };
}

test("a commit logs one JSON line with its figures, and writes one data point", () => {
  const { lines, points } = observed({});
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0])).toMatchObject({ stream: "orders", batches: 1, emitted: 1, duplicates: 1, watermark: 0, watermarkAfter: 10 });
  expect(points).toHaveLength(1);
});

test("COMMIT_LOG=off: no line, the data point still", () => {
  const { lines, points } = observed({ COMMIT_LOG: "off" });
  expect(lines).toEqual([]);
  expect(points).toHaveLength(1);
  expect(observed({ COMMIT_LOG: "on" }).lines).toHaveLength(1);
});

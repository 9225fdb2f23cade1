/** The bench's micro-batch timer (src/instrument/batch-timing.ts): each span is measured from the right moment and summed. */
import { expect, test } from "vitest";
import { BatchTimer, BETWEEN_MAX_MS, noMicroBatchTimes } from "../../../src/instrument/batch-timing";

test("a request's queue time runs from its arrival to its micro-batch's start; apply, commit and the gap between runs follow", () => {
  const times = noMicroBatchTimes();
  const timer = new BatchTimer(() => times);
  const [a, b, c] = [{}, {}, {}];
  timer.submitted([a], 100);
  timer.submitted([b, c], 104);
  const run = timer.run([a, b, c], 110);
  run.applied(118);
  run.committed(121);
  expect(times).toEqual({ runs: 1, requests: 3, queuedMs: 10 + 6 + 6, applyMs: 8, commitMs: 3, betweenMs: 0, gaps: 0 });

  const d = {};
  timer.submitted([d], 130);
  const next = timer.run([d], 131);
  next.applied(135);
  next.committed(140);
  expect(times).toEqual({ runs: 2, requests: 4, queuedMs: 23, applyMs: 12, commitMs: 8, betweenMs: 10, gaps: 1 });
});

test("a failed micro-batch adds no gap to the next one's count; an item never seen arriving waited nothing", () => {
  const times = noMicroBatchTimes();
  const timer = new BatchTimer(() => times);
  timer.run([{}], 0).committed(5);
  const failing = timer.run([{}], 10);
  failing.applied(12);
  timer.failed();
  timer.run([{}], 50).committed(55);
  expect(times.betweenMs).toBe(5);
  expect(times.gaps).toBe(1);
  expect(times.queuedMs).toBe(0);
  expect(times.runs).toBe(3);
});

test("a pause in the load (a gap of a second or more) is not part of the cycle", () => {
  const times = noMicroBatchTimes();
  const timer = new BatchTimer(() => times);
  timer.run([{}], 0).committed(10);
  timer.run([{}], 10 + BETWEEN_MAX_MS).committed(2_000);
  timer.run([{}], 2_000 + BETWEEN_MAX_MS - 1).committed(3_500);
  expect(times).toMatchObject({ runs: 3, gaps: 1, betweenMs: BETWEEN_MAX_MS - 1 });
});

test("the figures go where `into` points at the time: counters taken and started afresh get the later spans", () => {
  let times = noMicroBatchTimes();
  const timer = new BatchTimer(() => times);
  const run = timer.run([{}], 0);
  times = noMicroBatchTimes();
  run.applied(4);
  run.committed(6);
  expect(times).toMatchObject({ runs: 0, applyMs: 4, commitMs: 2 });
});

/** The commit log's pace (src/instrument/commit-log.ts) against a model: every commit's figures are written exactly once, lines at least a second apart, none held past its second. */
import fc from "fast-check";
import { expect, test } from "vitest";
import { CommitLog, commitLogMode, mergeLines, type SummaryLine } from "../../../src/instrument/commit-log";
import type { CommitLine } from "../../../src/stream/metrics";

const INTERVAL = 1_000;

test("commits at any times: their figures are all written once, in order, lines a second apart, none held longer than its second", () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ gap: fc.integer({ min: 0, max: 2_500 }), emitted: fc.nat(50), duplicates: fc.nat(5), durationMs: fc.nat(100) }), { maxLength: 60 }),
      (commits) => {
        const log = new CommitLog(INTERVAL);
        const written: { at: number; line: SummaryLine }[] = [];
        let now = 0;
        let watermark = 0;
        const firstHeldAt: number[] = [];
        const flushDue = (until: number) => {
          // The observer's timer: the held line is written when its second ends.
          const due = log.dueAt();
          if (due !== null && due <= until) written.push({ at: due, line: log.take(due)! });
        };
        for (const c of commits) {
          flushDue(now + c.gap);
          now += c.gap;
          const line: CommitLine = {
            stream: "s",
            batches: 1,
            emitted: c.emitted,
            duplicates: c.duplicates,
            late: 0,
            rejected: 0,
            watermark,
            watermarkAfter: watermark + 1,
            durationMs: c.durationMs,
          };
          watermark++;
          const heldBefore = log.dueAt() !== null;
          const out = log.add(line, now);
          if (out) written.push({ at: now, line: out });
          else if (!heldBefore) firstHeldAt.push(now);
        }
        flushDue(Infinity);
        expect(log.dueAt()).toBeNull();
        const sum = (f: (x: { emitted: number; duplicates: number }) => number, xs: { emitted: number; duplicates: number }[]) =>
          xs.reduce((a, x) => a + f(x), 0);
        expect(written.reduce((a, w) => a + w.line.commits, 0)).toBe(commits.length);
        expect(
          sum(
            (x) => x.emitted,
            written.map((w) => w.line),
          ),
        ).toBe(sum((x) => x.emitted, commits));
        expect(
          sum(
            (x) => x.duplicates,
            written.map((w) => w.line),
          ),
        ).toBe(sum((x) => x.duplicates, commits));
        // In order: each line's watermarks continue the last one's.
        let expected = 0;
        for (const { line } of written) {
          expect(line.watermark).toBe(expected);
          expected = line.watermarkAfter;
          expect(line.watermarkAfter - line.watermark).toBe(line.commits);
        }
        for (let i = 1; i < written.length; i++) expect(written[i].at - written[i - 1].at).toBeGreaterThanOrEqual(INTERVAL);
        // A held line waits at most one interval after the line before it, so never more than a second after its first commit.
        for (const at of firstHeldAt) expect(written.some((w) => w.at >= at && w.at <= at + INTERVAL)).toBe(true);
      },
    ),
  );
});

test("two lines merge: figures summed, the watermark before the first and after the last, the longest duration", () => {
  const a: SummaryLine = {
    stream: "s",
    commits: 2,
    batches: 3,
    emitted: 4,
    duplicates: 1,
    late: 2,
    rejected: 0,
    watermark: 5,
    watermarkAfter: 7,
    durationMs: 30,
  };
  const b: SummaryLine = {
    stream: "s",
    commits: 1,
    batches: 1,
    emitted: 1,
    duplicates: 0,
    late: 0,
    rejected: 2,
    watermark: 7,
    watermarkAfter: 9,
    durationMs: 12,
  };
  expect(mergeLines(a, b)).toEqual({
    stream: "s",
    commits: 3,
    batches: 4,
    emitted: 5,
    duplicates: 1,
    late: 2,
    rejected: 2,
    watermark: 5,
    watermarkAfter: 9,
    durationMs: 30,
  });
});

test("COMMIT_LOG's modes: off, each, and a line a second otherwise", () => {
  expect(commitLogMode("off")).toBe("off");
  expect(commitLogMode("each")).toBe("each");
  expect(commitLogMode(undefined)).toBe("summary");
  expect(commitLogMode("on")).toBe("summary");
});

import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { formatCursor, parseCursor } from "../../../src/stream/shard-cursor";
import { knownSources, mergeSources, pendingSources, shardedWatermark, type ShardSources } from "../../../src/stream/shard-watermark";
import { SHARD_SEQ_BASE, seqBase, shardFor, shardOfSeq } from "../../../src/stream/shards";
import { globalWatermark, type SourceProgress } from "../../../src/stream/watermark";

function config(body: Record<string, unknown>): StreamConfig {
  const r = parseStreamConfig({ key: ["id"], eventTime: "ts", watermarkDelay: "1 minute", ...body });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.config;
}

describe("which shard judges a batch", () => {
  test("a function of the batch id alone, within range, and spread over the shards", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 256 }), (id, shards) => {
        const k = shardFor(id, shards);
        expect(k).toBeGreaterThanOrEqual(0);
        expect(k).toBeLessThan(shards);
        expect(shardFor(id, shards)).toBe(k);
      }),
    );
    expect(shardFor("anything", 1)).toBe(0);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4_000; i++) counts[shardFor(crypto.randomUUID(), 4)]++;
    for (const n of counts) expect(n).toBeGreaterThan(800); // ~1,000 each
  });

  test("commit numbers say their shard; shard 0's are today's", () => {
    expect(seqBase(0)).toBe(0);
    expect(shardOfSeq(1)).toBe(0);
    expect(shardOfSeq(SHARD_SEQ_BASE - 1)).toBe(0);
    expect(shardOfSeq(3 * SHARD_SEQ_BASE + 17)).toBe(3);
    expect(Number.isSafeInteger(seqBase(256) + SHARD_SEQ_BASE - 1)).toBe(true);
  });

  test("the config takes 1–256 shards, stores none for one, and calls it a bound field", () => {
    expect(config({}).shards).toBeUndefined();
    expect(config({ shards: 1 }).shards).toBeUndefined();
    expect(config({ shards: 256 }).shards).toBe(256);
    for (const bad of [0, 257, 2.5, "2", null]) expect(parseStreamConfig({ key: ["id"], mode: "global", shards: bad }).ok, String(bad)).toBe(false);
  });
});

describe("the lanes' cursor over shards", () => {
  test("one shard: one number, as always", () => {
    expect(parseCursor(undefined, 1)).toEqual({ ok: true, after: [0] });
    expect(parseCursor("17", 1)).toEqual({ ok: true, after: [17] });
    expect(parseCursor("1,2", 1).ok).toBe(false);
    expect(parseCursor("-1", 1).ok).toBe(false);
    expect(parseCursor("x", 1).ok).toBe(false);
  });

  test("several: a number per shard named by its value, the others from their start; what X-Commit-Seq says reads back", () => {
    const B = SHARD_SEQ_BASE;
    expect(parseCursor(undefined, 3)).toEqual({ ok: true, after: [0, B, 2 * B] });
    expect(parseCursor(`${2 * B + 5},7`, 3)).toEqual({ ok: true, after: [7, B, 2 * B + 5] });
    expect(parseCursor("0", 3)).toEqual({ ok: true, after: [0, B, 2 * B] });
    expect(parseCursor(`${3 * B + 1}`, 3).ok).toBe(false); // no shard 3
    expect(parseCursor("1,2", 3).ok).toBe(false); // two of shard 0
    fc.assert(
      fc.property(fc.array(fc.nat(1_000_000), { minLength: 2, maxLength: 8 }), (n) => {
        const upTo = n.map((x, k) => seqBase(k) + x);
        expect(parseCursor(formatCursor(upTo), upTo.length)).toEqual({ ok: true, after: upTo });
      }),
    );
  });
});

// The watermark over shards' reports is never ahead of the one over every commit, and equal once every report is fresh.
const sourceName = fc.constantFrom("a", "b", "c", "d");
const progress = fc.record({
  maxEventTime: fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: null }),
  lastBatchAt: fc.integer({ min: 0, max: 100_000 }),
});
const shardTruth = fc.dictionary(sourceName, progress, { maxKeys: 4 });

/**
 * A report as a shard may have sent it earlier: smaller figures, a source's
 * first commit here reported as pending before it. A shard reports within an
 * interval (100 here) of its last commit, so its last batch time is at most that old.
 */
function staleOf(truth: Record<string, SourceProgress>, cut: number, pendingOnly: boolean): ShardSources {
  const sources: Record<string, SourceProgress> = {};
  const pending: Record<string, number | null> = {};
  for (const [name, p] of Object.entries(truth)) {
    const older = {
      maxEventTime: p.maxEventTime === null ? null : Math.max(0, p.maxEventTime - cut),
      lastBatchAt: Math.max(0, (p.lastBatchAt ?? 0) - Math.min(cut, 100)),
    };
    if (pendingOnly && name === "d")
      pending[name] = p.maxEventTime; // its first commit here, reported before it
    else sources[name] = older;
  }
  return { sources, pending };
}

describe("the global watermark over shards (src/stream/shard-watermark.ts)", () => {
  test("never ahead of the watermark over every shard's committed progress; equal when the reports are fresh (property)", () => {
    fc.assert(
      fc.property(
        fc.array(shardTruth, { minLength: 1, maxLength: 5 }),
        fc.constantFrom<"min" | "max">("min", "max"),
        fc.option(fc.constantFrom(5_000, 50_000), { nil: undefined }),
        fc.nat(50_000),
        fc.integer({ min: 0, max: 200_000 }),
        fc.boolean(),
        (truths, policy, idle, cut, now, pendingOnly) => {
          const c = config({ watermarkPolicy: policy, ...(idle ? { idleTimeout: idle } : {}) });
          const truth = globalWatermark(c, mergeSources(truths.map((t) => ({ sources: t, pending: {} }))), 0, now);
          const stale = shardedWatermark(
            c,
            truths.map((t) => staleOf(t, cut, pendingOnly)),
            0,
            now,
            100,
          );
          expect(stale).toBeLessThanOrEqual(truth);
          const fresh = shardedWatermark(
            c,
            truths.map((t) => ({ sources: t, pending: {} })),
            0,
            now + 100, // judged an interval later: idle as one shard judges at `now`
            100,
          );
          expect(fresh).toBe(truth);
        },
      ),
    );
  });

  test("a source pending in a shard holds a min back at once, and a max waits for its commit", () => {
    const min = config({});
    const reports: ShardSources[] = [{ sources: { a: { maxEventTime: 600_000, lastBatchAt: 1 } }, pending: {} }];
    expect(shardedWatermark(min, reports, 0, 10, 100)).toBe(540_000);
    const withPending = [...reports, { sources: {}, pending: { b: 120_000 } }];
    expect(shardedWatermark(min, withPending, 0, 10, 100)).toBe(60_000);
    expect(shardedWatermark(config({ watermarkPolicy: "max" }), [{ sources: {}, pending: { b: 900_000 } }, ...reports], 0, 10, 100)).toBe(540_000);
    expect(knownSources(min, withPending)).toEqual(["a", "b"]);
    // What a shard reports before a commit: the unknown sources, each with the least planned max (null only when none has one).
    const members = [
      { source: "a", maxEventTime: 5 },
      { source: "n", maxEventTime: 9 },
      { source: "n", maxEventTime: 3 },
      { source: "m", maxEventTime: null },
      { source: "n", maxEventTime: null },
    ];
    expect(pendingSources(members, (s) => s === "a")).toEqual({ n: 3, m: null });
    expect(knownSources(min, withPending, false)).toEqual(["a"]); // b's batch may yet fail: another shard must report b itself
    // Never below the floor it is given.
    expect(shardedWatermark(min, withPending, 100_000, 10, 100)).toBe(100_000);
  });
});

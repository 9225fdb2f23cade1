/**
 * The micro-batcher (src/microbatch): requests that arrive while a
 * micro-batch runs are coalesced into the next one. Properties:
 *
 *  a. The queue itself: one run at a time, every request answered once with
 *     its own answer, groups in arrival order and within the weight cap, a
 *     lone request runs at once, a failed run fails only its own group.
 *  b. Concurrent requests driven through the batcher and the real pure pieces
 *     of a group run (planBatch, partitionPayloads, applyBatch per entry,
 *     memberDecisions, mergeDecisions, advanceWatermark) decide exactly as the
 *     reference model does when it judges each group's members in order under
 *     the watermark committed before the group, then commits them together;
 *     and DESIGN §2.8 holds over the union of what was emitted. Each group
 *     is one commit record (src/coordinator/ledger.ts): its members' commit
 *     numbers are contiguous, in arrival order, and the idempotency window
 *     (src/coordinator/window.ts) forgets whole groups, oldest first, so the
 *     ids remembered are always one run of commit numbers.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { ItemFailed, MicroBatcher } from "../../../src/microbatch/batcher";
import { keptSeqOf, memberDecisions, partitionPayloads } from "../../../src/microbatch/group";
import { coalesceRefs, concatParts, formatRef, parseRef } from "../../../src/output/object-ref";
import { rowsOf } from "../../../src/stream/row-columns";
import { dedupSettings, mergeDecisions, planBatch, type BatchCounts } from "../../../src/stream/batch";
import { parseStreamConfig, type StreamConfig } from "../../../src/stream/config";
import { applyBatch, isExpired } from "../../../src/stream/dedup";
import type { Row } from "../../../src/stream/schema";
import { advanceWatermark, INITIAL_WATERMARK, type WatermarkState } from "../../../src/stream/watermark";
import { pruneStep, type RememberedGroup } from "../../../src/coordinator/window";
import { ReferenceModel, type ModelDecision } from "../model";
import { configBody, expectGuarantees, materialize, modelSpec, NOW, scenarioArb, type Emitted } from "../scenarios";

/** Lets `n` microtask turns pass: how the tests interleave producers and runs. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

// ---------------------------------------------------------------- a. the queue

describe("MicroBatcher", () => {
  test("one run at a time; each item answered once, in order, groups within the caps (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ weight: fc.integer({ min: 1, max: 5 }), wait: fc.nat(6) }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(6), { minLength: 40, maxLength: 40 }),
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        async (items, runTurns, maxWeight, maxItems) => {
          const groups: number[][] = [];
          let running = 0;
          let r = 0;
          const batcher = new MicroBatcher<{ n: number; weight: number }, string>(
            async (group) => {
              running++;
              expect(running).toBe(1);
              groups.push(group.map((g) => g.n));
              await turns(runTurns[r++ % runTurns.length]);
              running--;
              return group.map((g) => `answer ${g.n}`);
            },
            { maxWeight, weigh: (x) => x.weight, maxItems },
          );
          const answers = await Promise.all(
            items.map(async (it, n) => {
              await turns(it.wait);
              return batcher.submit({ n, weight: it.weight });
            }),
          );
          expect(answers).toEqual(items.map((_, n) => `answer ${n}`));
          // every item in exactly one group
          expect(groups.flat().sort((a, b) => a - b)).toEqual(items.map((_, n) => n));
          for (const g of groups) {
            const weight = g.reduce((a, n) => a + items[n].weight, 0);
            if (g.length > 1) expect(weight).toBeLessThanOrEqual(maxWeight);
            expect(g.length).toBeLessThanOrEqual(maxItems ?? Infinity);
          }
          // arrival order: each group's items arrived after every item of earlier groups was queued
          expect(groups[0].length).toBe(1); // the first request runs at once, alone
          expect(batcher.waiting).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  test("takeNext fixes the next run from inside a run: it runs next, exactly those items; nothing else changes (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ weight: fc.integer({ min: 1, max: 5 }), wait: fc.nat(6) }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.record({ before: fc.nat(4), take: fc.boolean(), after: fc.nat(4) }), { minLength: 30, maxLength: 30 }),
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        async (items, runs, maxWeight, maxItems) => {
          const groups: number[][] = [];
          const taken: (number[] | null)[] = [];
          let r = 0;
          const batcher: MicroBatcher<{ n: number; weight: number }, string> = new MicroBatcher(
            async (group) => {
              groups.push(group.map((g) => g.n));
              const run = runs[r++ % runs.length];
              await turns(run.before);
              // As a commit does: whatever waits now is the next run (twice: the same items).
              const next = run.take ? batcher.takeNext().map((g) => g.n) : null;
              if (next) expect(batcher.takeNext().map((g) => g.n)).toEqual(next);
              taken.push(next);
              await turns(run.after);
              return group.map((g) => `answer ${g.n}`);
            },
            { maxWeight, weigh: (x) => x.weight, maxItems },
          );
          const answers = await Promise.all(items.map(async (it, n) => (await turns(it.wait), batcher.submit({ n, weight: it.weight }))));
          expect(answers).toEqual(items.map((_, n) => `answer ${n}`));
          expect(groups.flat().sort((a, b) => a - b)).toEqual(items.map((_, n) => n));
          for (const g of groups) if (g.length > 1) expect(g.reduce((a, n) => a + items[n].weight, 0)).toBeLessThanOrEqual(maxWeight);
          for (const g of groups) expect(g.length).toBeLessThanOrEqual(maxItems ?? Infinity);
          taken.forEach((t, i) => {
            if (t && t.length > 0) expect(groups[i + 1]).toEqual(t);
          });
          expect(batcher.waiting).toBe(0);
          expect(batcher.takeNext()).toEqual([]); // outside a run: nothing to take
        },
      ),
      { numRuns: 200 },
    );
  });

  test("coalesce: after a run of several, the next run waits while requests keep arriving; after a lone one it starts at once", async () => {
    const groups: number[][] = [];
    let waits = 0;
    const batcher = new MicroBatcher<number, number>(
      async (group) => {
        groups.push(group);
        await turns(2);
        return group;
      },
      { maxWeight: 100, weigh: () => 1, coalesce: { wait: async () => (waits++, turns(3)), turns: 4 } },
    );
    // A lone request: no wait (the last run took fewer than two).
    await batcher.submit(1);
    expect(waits).toBe(0);
    // Three at once: the first runs at once, alone; the two queued meanwhile form the next run.
    await Promise.all([batcher.submit(2), batcher.submit(3), batcher.submit(4)]);
    expect(groups).toEqual([[1], [2], [3, 4]]);
    // After a run of two, a fresh run waits: the requests arriving during its waits join it, up to `turns` waits.
    const late = [10, 11, 12, 13].map(async (n, i) => (await turns(2 * i), batcher.submit(n)));
    expect(await Promise.all(late)).toEqual([10, 11, 12, 13]);
    expect(groups.slice(3)).toEqual([[10, 11, 12, 13]]);
    expect(waits).toBeGreaterThan(1);
    expect(waits).toBeLessThanOrEqual(4);
  });

  test("coalesce: a run of one that queued behind another gathers before its commit fixes the next run; a first one does not", async () => {
    for (const coalesce of [true, false]) {
      const groups: number[][] = [];
      const arriving = [10, 11];
      const later: Promise<number>[] = [];
      const batcher: MicroBatcher<number, number> = new MicroBatcher(
        async (group) => {
          groups.push(group);
          await batcher.gatherNext();
          batcher.takeNext(); // as a commit does
          return group;
        },
        {
          maxWeight: 100,
          weigh: () => 1,
          // Requests arrive only while the batcher waits.
          ...(coalesce
            ? {
                coalesce: {
                  wait: async () => {
                    await turns(1);
                    const n = arriving.shift();
                    if (n !== undefined) later.push(batcher.submit(n));
                  },
                  turns: 8,
                },
              }
            : {}),
        },
      );
      expect(await Promise.all([batcher.submit(0), batcher.submit(1)])).toEqual([0, 1]);
      expect(await Promise.all(later)).toEqual(coalesce ? [10, 11] : []);
      // 0 runs at once and does not wait (nothing ran before it); 1 queued behind it, alone: it waits, and its commit fixes what arrived.
      expect(groups).toEqual(coalesce ? [[0], [1], [10, 11]] : [[0], [1]]);
    }
  });

  test("coalesce: the waits stop after `quiet` in a row that brought nothing, or at `turns`", async () => {
    for (const [quiet, turnsAtMost, arrivals, expected] of [
      [1, 8, 0, 1],
      [3, 8, 0, 3],
      [3, 4, 0, 3],
      [2, 3, 0, 2],
      [1, 3, 5, 3],
    ] as const) {
      let waits = 0;
      const later: Promise<number>[] = [];
      const batcher: MicroBatcher<number, number> = new MicroBatcher(
        async (group) => {
          await batcher.gatherNext();
          return group;
        },
        {
          maxWeight: 100,
          weigh: () => 1,
          coalesce: {
            wait: async () => {
              waits++;
              await turns(3);
              if (waits <= arrivals) later.push(batcher.submit(100 + waits));
            },
            turns: turnsAtMost,
            quiet,
          },
        },
      );
      // 0 runs first (no wait); 1, queued behind it alone, waits.
      await Promise.all([batcher.submit(0), batcher.submit(1), ...later]);
      await Promise.all(later);
      expect(waits).toBe(expected);
    }
  });

  test("a failed run fails its own group only", async () => {
    let runs = 0;
    const batcher = new MicroBatcher<number, number>(
      async (group) => {
        runs++;
        await turns(3);
        if (group.includes(13)) throw new Error("crash");
        return group;
      },
      { maxWeight: 100, weigh: () => 1 },
    );
    const first = batcher.submit(1);
    const second = [batcher.submit(12), batcher.submit(13)];
    const third = (async () => {
      await turns(5); // after the second group has started
      return batcher.submit(14);
    })();
    const settled = await Promise.allSettled([first, ...second, third]);
    expect(settled.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([1, "crash", "crash", 14]);
    expect(runs).toBe(3);
    expect(await batcher.submit(2)).toBe(2); // and it goes on
  });

  test("an ItemFailed answer fails its item alone; the rest of its run is answered", async () => {
    const batcher = new MicroBatcher<number, number>(async (group) => group.map((n) => (n % 2 === 0 ? new ItemFailed(new Error(`bad ${n}`)) : n * 10)), {
      maxWeight: 100,
      weigh: () => 1,
    });
    const settled = await Promise.allSettled(batcher.submitAll([1, 2, 3, 4]));
    expect(settled.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([10, "bad 2", 30, "bad 4"]);
  });
});

// ---------------------------------------------------------------- pieces

describe("group objects", () => {
  test("each member's part is its byte range, and adjacent ranges read as one", () => {
    const parts = ["a\n", "", "ü\n", "c\n"];
    const { body, ranges } = concatParts(parts);
    const text = (r: { offset: number; length: number }) => new TextDecoder().decode(body.slice(r.offset, r.offset + r.length));
    expect(ranges[1]).toBeNull();
    expect(ranges.map((r) => (r ? text(r) : ""))).toEqual(parts);
    const refs = ranges.filter((r) => r !== null).map((range) => parseRef(formatRef({ key: "k", range: range! })));
    expect(coalesceRefs(refs)).toEqual([{ key: "k", range: { offset: 0, length: body.length } }]);
    expect(coalesceRefs([{ key: "a" }, { key: "b", range: { offset: 0, length: 1 } }, { key: "b", range: { offset: 2, length: 1 } }])).toHaveLength(3);
  });
});

// ---------------------------------------------------------------- b. against the model

interface Answer {
  source: string;
  watermark: number;
  watermarkAfter: number;
  decisions: ModelDecision[];
  emitted: Row[];
  counts: BatchCounts;
  group: number;
  /** its place in the group: the order in which it arrived */
  position: number;
  /** its commit number: the group's first + its position (one commit record per group) */
  seq: number;
}

/** Partitions as plain maps, and a group run built from the real pure pieces, as the Coordinator runs it. */
class GroupedStream {
  readonly config: StreamConfig;
  readonly partitions: { watermark: number; keys: Map<string, number | null>; digests: Map<string, string | null> }[];
  wm: WatermarkState = INITIAL_WATERMARK;
  groups = 0;
  /** one commit record per group, as the ledger keeps them: last commit number, commit "time" (the group's number), max event time */
  readonly records: (RememberedGroup & { first: number })[] = [];
  readonly batcher: MicroBatcher<{ source: string; rows: unknown[] }, Answer>;

  constructor(body: unknown, runTurns: () => number) {
    const r = parseStreamConfig(body);
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    this.config = r.config;
    this.partitions = Array.from({ length: this.config.partitions }, () => ({ watermark: 0, keys: new Map(), digests: new Map() }));
    this.batcher = new MicroBatcher(
      async (items) => {
        const group = this.groups++;
        const watermark = this.wm.watermark; // committed before this group
        const members = items.map((it, i) => ({
          ledger: `${it.source}\n${group}.${i}`,
          plan: planBatch(this.config, it.rows, NOW, { source: it.source, watermark }),
        }));
        await turns(runTurns());
        const answers = new Map<number, string[]>();
        for (const [p, entries] of partitionPayloads(members)) {
          const part = this.partitions[p];
          part.watermark = Math.max(part.watermark, watermark);
          for (const [k, exp] of [...part.keys]) if (isExpired(exp, part.watermark)) part.keys.delete(k);
          answers.set(
            p,
            entries.map((e) => {
              // The partition's step (src/partition/partition.ts judges with applyBatch, then stores its inserts).
              const r = applyBatch(
                dedupSettings(this.config),
                part.watermark,
                rowsOf(e.rows),
                (k) => part.keys.has(k),
                (k) => part.digests.get(k) ?? null,
              );
              for (const c of r.inserts) part.keys.set(c.stateKey, c.expiresAt), part.digests.set(c.stateKey, c.digest ?? null);
              return r.decisions.join("");
            }),
          );
        }
        await turns(runTurns());
        const decided = memberDecisions(members, answers);
        const merged = members.map((m, i) => mergeDecisions(m.plan, decided[i]));
        for (const [i, it] of items.entries()) this.wm = advanceWatermark(this.config, this.wm, it.source, merged[i].maxEventTime, NOW);
        const first = (this.records.at(-1)?.seq ?? 0) + 1;
        const times = merged.flatMap((m) => (m.maxEventTime === null ? [] : [m.maxEventTime]));
        this.records.push({ first, seq: first + items.length - 1, committedAt: group, maxEventTime: times.length > 0 ? Math.max(...times) : null });
        return merged.map((m, i): Answer => {
          const decisions: ModelDecision[] = Array.from({ length: m.counts.input }, () => "r");
          for (const [p, rows] of members[i].plan.subBatches) rows.forEach((r, j) => (decisions[r.index] = decided[i].get(p)![j] as ModelDecision));
          return {
            source: items[i].source,
            watermark,
            watermarkAfter: this.wm.watermark,
            decisions,
            emitted: m.emitted,
            counts: m.counts,
            group,
            position: i,
            seq: first + i,
          };
        });
      },
      { maxWeight: 1_000, weigh: (x) => x.rows.length },
    );
  }
}

describe("concurrent requests through the micro-batcher", () => {
  test("decide as the model judging each group under the watermark committed before it (property)", async () => {
    let coalesced = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb(10, 6), fc.array(fc.nat(5), { minLength: 60, maxLength: 60 }), async (s, choices) => {
        let c = 0;
        const pick = () => choices[c++ % choices.length];
        const stream = new GroupedStream(configBody(s), pick);
        const batches = materialize(s);
        // Producers send at staggered moments: some while a micro-batch runs.
        const answers = await Promise.all(
          batches.map(async (b, i) => {
            await turns(choices[i % choices.length] * 2);
            return stream.batcher.submit(b);
          }),
        );
        // Replay the groups, in the order they ran, through the model.
        const model = new ReferenceModel(modelSpec(s));
        const byGroup = new Map<number, number[]>();
        answers.forEach((a, i) => byGroup.set(a.group, [...(byGroup.get(a.group) ?? []), i]));
        for (const members of byGroup.values()) members.sort((x, y) => answers[x].position - answers[y].position);
        const emitted: Emitted[] = [];
        for (const g of [...byGroup.keys()].sort((a, b) => a - b)) {
          const members = byGroup.get(g)!;
          if (members.length > 1) coalesced++;
          const watermark = model.watermark;
          const accepted = members.map((i) => batches[i].rows.map((raw, j) => model.validate(raw, j)).filter((r) => r !== null));
          for (const [k, i] of members.entries()) {
            const judged = model.judge(accepted[k], watermark, 0);
            const want: ModelDecision[] = batches[i].rows.map(() => "r");
            accepted[k].forEach((r, j) => (want[r.index] = judged[j]));
            expect(answers[i].decisions.join(""), `batch ${i} in group ${g}`).toBe(want.join(""));
            expect(answers[i].watermark).toBe(watermark);
            accepted[k].forEach((r, j) => judged[j] === "e" && emitted.push({ key: r.key, t: r.t }));
          }
          // a rejected conflict's event time does not count (DESIGN §2.1)
          for (const [k, i] of members.entries())
            model.commit(
              batches[i].source,
              accepted[k].filter((r) => answers[i].decisions[r.index] !== "x"),
            );
          for (const i of members) expect(answers[i].watermarkAfter, `group ${g}`).toBe(model.watermark);
        }
        for (const a of answers) {
          expect(a.counts.emitted + a.counts.duplicates + a.counts.late + a.counts.rejected.length).toBe(a.counts.input);
          expect(a.emitted).toHaveLength(a.counts.emitted);
        }
        expectGuarantees(s, emitted);
        // One record per group; commit numbers 1…n without gaps, a group's members in arrival order.
        expect(stream.records).toHaveLength(byGroup.size);
        expect([...answers.map((a) => a.seq)].sort((a, b) => a - b)).toEqual(answers.map((_, i) => i + 1));
        for (const a of answers) {
          const r = stream.records[a.group];
          expect(a.seq).toBe(r.first + a.position);
          expect(a.seq).toBeLessThanOrEqual(r.seq);
        }
        // The window forgets whole groups oldest first: what is left is one run of commit numbers, ending at the last.
        const ctx = { now: stream.records.length / 2, window: 0, mode: s.mode, watermark: stream.wm.watermark, publishedUpTo: Number.MAX_SAFE_INTEGER };
        const { upTo } = pruneStep(stream.records, ctx, Infinity);
        const kept = stream.records.filter((r) => upTo === null || r.seq > upTo);
        const seqs = answers
          .map((a) => a.seq)
          .filter((q) => kept.some((r) => q >= r.first && q <= r.seq))
          .sort((a, b) => a - b);
        expect(seqs).toEqual(seqs.length === 0 ? [] : Array.from({ length: seqs.length }, (_, i) => answers.length - seqs.length + 1 + i));
      }),
      { numRuns: 300 },
    );
    // The schedules do coalesce requests into groups.
    expect(coalesced).toBeGreaterThan(50);
  });
});

describe("kept copies' commit numbers (the conflicts and duplicates lanes)", () => {
  test("a member of the group commits as firstSeq + its position; another batch as the ledger says", () => {
    const members = [{ ledger: "s\nb2" }, { ledger: "t\nb3" }];
    const ledger = (source: string, batchId: string) => (source === "s" && batchId === "b1" ? 1 : null);
    const seqOf = keptSeqOf(members, 7, ledger);
    expect([seqOf("s", "b2"), seqOf("t", "b3"), seqOf("s", "b1"), seqOf("s", "b9"), seqOf("s", "b3")]).toEqual([7, 8, 1, null, null]);
    // A caller that cannot know the group's numbers names its members by none.
    expect(keptSeqOf(members, undefined, ledger)("t", "b3")).toBeNull();
  });
});

describe("work between two runs (MicroBatcher.exclusive)", () => {
  const deferred = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  };

  test("waits for the run going, runs before the next group, and what arrives meanwhile runs after it", async () => {
    const log: string[] = [];
    const gate = deferred();
    const b = new MicroBatcher<string, string>(
      async (items) => {
        log.push(`run ${items.join(",")}`);
        if (items[0] === "a") await gate.promise;
        log.push(`end ${items.join(",")}`);
        return items;
      },
      { maxWeight: 100, weigh: () => 1 },
    );
    const a = b.submit("a");
    await Promise.resolve();
    const ex = b.exclusive(async () => {
      log.push("between");
      await Promise.resolve();
      const late = b.submit("c"); // arrives during the work: runs after it
      log.push("between done");
      return { late }; // wrapped: the work must not wait for a run, which waits for it
    });
    const queued = b.submit("b");
    gate.resolve();
    await a;
    const { late } = await ex;
    await Promise.all([queued, late]);
    expect(log).toEqual(["run a", "end a", "between", "between done", "run b,c", "end b,c"]);
  });

  test("runs at once when no run is going, and a failure reaches its caller only", async () => {
    const b = new MicroBatcher<string, string>(async (items) => items, { maxWeight: 100, weigh: () => 1 });
    await expect(b.exclusive(async () => 7)).resolves.toBe(7);
    await expect(
      b.exclusive(async () => {
        throw new Error("switch failed");
      }),
    ).rejects.toThrow("switch failed");
    await expect(b.submit("x")).resolves.toBe("x");
  });
});

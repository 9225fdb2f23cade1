/**
 * The move's steps (src/rescale/mover.ts) on real partitions, a bucket a
 * page or a few keys a page (the bucket then forgotten after its last), with a crash
 * at every point: the partitions' calls fail from the k-th on (before or
 * after it reaches the partition, or while the caller keeps its cursor),
 * and the move resumes from the last cursor kept. Every key arrives once,
 * with its receipt; the old partitions end empty; the count of keys taken
 * is the count of keys.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Partition } from "../../../src/partition/partition";
import type { PartitionRow, StateReceipt } from "../../../src/partition/protocol";
import { handOverDecisions, moveBuckets, START, type MoveCursor, type MoveSides } from "../../../src/rescale/mover";
import { contentDigest } from "../../../src/stream/content";
import type { DedupSettings } from "../../../src/stream/dedup";
import { ownerOf } from "../../../src/stream/partition-map";
import { applyOne } from "../helpers";

const MIN = 60_000;
type Stub = DurableObjectStub<Partition>;
let run = 0;

class Crash extends Error {}

/** Stubs whose calls fail from the `at`-th on: half of them after the partition did its work (the answer lost), half before. */
function crashing(stubs: Stub[], at: number): { stubs: Stub[]; calls: () => number } {
  let calls = 0;
  const wrap = (s: Stub) =>
    new Proxy(s, {
      get(target, name) {
        // Every property of an RPC stub is a method of the object's: called by name, never through Function.prototype.
        if (typeof name !== "string" || name === "then") return Reflect.get(target, name);
        return async (...args: unknown[]) => {
          const n = ++calls;
          if (n >= at && n % 2 === 0) throw new Crash(`crash before call ${n}`);
          const r = await (target as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name](...args);
          if (n >= at) throw new Crash(`crash after call ${n}`);
          return r;
        };
      },
    }) as Stub;
  return { stubs: stubs.map(wrap), calls: () => calls };
}

async function receiptsOf(set: Stub[]): Promise<StateReceipt[]> {
  const out: StateReceipt[] = [];
  for (const p of set) for (const e of await p.list("e1", "", 100_000)) out.push(...(await p.lookup("e1", e.key)));
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

describe("a move resumed after a crash", () => {
  const settings: DedupSettings = { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true };
  const t0 = Date.UTC(2026, 0, 1);

  it("moves every key once, from the cursor kept last, whatever call the crash hit", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        fc.constantFrom(0, 7, 60),
        async (from, to, crashAt, slow, pageKeys) => {
          const id = ++run;
          const set = (label: string, n: number) => Array.from({ length: n }, (_, p) => env.PARTITION.getByName(`mover-${id}-${label}/${p}`) as Stub);
          const [old, next] = [set("old", from), set("new", to)];
          // Keys over 20 minutes of event time (several buckets), a fifth repeated, some changed.
          for (let b = 0; b < 3; b++) {
            const rows = new Map<number, PartitionRow[]>();
            for (let i = 0; i < 300; i++) {
              const k = (i * 7 + b * 200) % 700;
              const key = `["order-${k}"]`;
              const p = ownerOf(key, { partitions: from });
              (rows.get(p) ?? rows.set(p, []).get(p)!).push({
                index: i,
                key,
                eventTime: t0 + (k % 20) * MIN,
                digest: contentDigest({ v: (k + b) % 9 === 0 }, []),
              });
            }
            for (const [p, list] of rows) await applyOne(old[p], { epoch: "e1", batch: `api\nb${b}`, watermark: t0 + b * MIN, settings, rows: list });
          }
          const watermark = t0 + 2 * MIN;
          for (const p of old) await p.advance("e1", watermark);
          const truth = await receiptsOf(old);
          const sides = (o: Stub[], n: Stub[]): MoveSides => ({ epoch: "e1", settings, from, to, old: (p) => o[p], next: (q) => n[q] });
          // The first attempt crashes at call `crashAt` (or, with `slow`, while its cursor is being kept); the second runs clean from what was kept.
          const kept: MoveCursor[] = Array.from({ length: from }, () => START);
          let taken = 0;
          let crashed = true;
          const c = crashing([...old, ...next], crashAt);
          const crashedSides = sides(c.stubs.slice(0, from), c.stubs.slice(from));
          try {
            await handOverDecisions(crashedSides);
            for (let p = 0; p < from; p++)
              await moveBuckets(
                crashedSides,
                p,
                watermark,
                kept[p],
                Number.POSITIVE_INFINITY,
                (cursor, n) => {
                  if (slow && c.calls() >= crashAt) throw new Crash("crash while keeping the cursor");
                  kept[p] = cursor;
                  taken += n;
                },
                pageKeys,
              );
            crashed = false;
          } catch (e) {
            if (!(e instanceof Crash)) throw e;
          }
          // Keys taken in by a crashed attempt whose cursor was not kept are taken again as no-ops: the count of such a bucket is lost with its cursor.
          const clean = sides(old, next);
          await handOverDecisions(clean);
          for (let p = 0; p < from; p++)
            kept[p] = await moveBuckets(
              clean,
              p,
              watermark,
              kept[p],
              Number.POSITIVE_INFINITY,
              (_cursor, n) => {
                taken += n;
              },
              pageKeys,
            );
          expect(kept.every((k) => k.done)).toBe(true);
          expect(await receiptsOf(next)).toEqual(truth);
          expect(await receiptsOf(old)).toEqual([]);
          for (const p of old) expect((await p.describe("e1")).rows).toBe(0);
          if (crashed) expect(taken).toBeLessThanOrEqual(truth.length);
          else expect(taken).toBe(truth.length);
        },
      ),
      { numRuns: 15 },
    );
  }, 180_000);
});

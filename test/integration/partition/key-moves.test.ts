/**
 * The bottom of an online rescale (src/partition/key-moves.ts): real text
 * partitions driven with random batches (duplicates, changed copies,
 * watermark moves) hand their keys out a bucket at a time, and the keys
 * are taken in by the partitions a new map routes them to. After the move
 * the new partitions hold exactly the old ones' keys, each with its receipt
 * (batch, drops, conflicts, expiry, event time), and judge new batches
 * exactly as the old ones do. Taking a bucket in twice (a move resumed after
 * a crash) changes nothing.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Partition } from "../../../src/partition/partition";
import type { MovedKey, PartitionRow, StateReceipt } from "../../../src/partition/protocol";
import { contentDigest } from "../../../src/stream/content";
import { stateKeyFor, type DedupSettings } from "../../../src/stream/dedup";
import { ownerOf, routingKeyOf, successors } from "../../../src/stream/partition-map";
import { rowColumns } from "../../../src/stream/row-columns";
import { applyOne } from "../helpers";

const MIN = 60_000;
type Stub = DurableObjectStub<Partition>;
let run = 0;

const batchArb = fc.record({
  keys: fc.array(fc.record({ k: fc.nat(80), t: fc.nat(20), v: fc.nat(2) }), { minLength: 1, maxLength: 60 }),
  watermark: fc.nat(12),
});

/** A batch routed by `partitions`: each partition's rows, and where each row went (partition, position there). */
function route(batch: { keys: { k: number; t: number; v: number }[] }, partitions: number, t0: number) {
  const rows = new Map<number, PartitionRow[]>();
  const at: [number, number][] = [];
  batch.keys.forEach(({ k, t, v }, index) => {
    const key = `["order-${k}"]`;
    const p = ownerOf(key, { partitions });
    const list = rows.get(p) ?? rows.set(p, []).get(p)!;
    at.push([p, list.length]);
    list.push({ index, key, eventTime: t0 + t * MIN, digest: contentDigest({ v }, []) });
  });
  return { rows, at };
}

/** A batch applied to a set of partitions; its decisions in the batch's row order. */
async function applyTo(
  set: Stub[],
  name: string,
  settings: DedupSettings,
  batch: { keys: { k: number; t: number; v: number }[] },
  watermark: number,
  t0: number,
  before?: Stub[],
) {
  const { rows, at } = route(batch, set.length, t0);
  const got = new Map<number, string>();
  for (const [p, list] of rows) {
    const inherited = before ? await peekFor(before, settings, list) : undefined;
    got.set(p, (await applyOne(set[p], { epoch: "e1", batch: name, watermark, settings, rows: list, inherited })).decisions);
  }
  return at.map(([p, i]) => got.get(p)![i]).join("");
}

/** What a Coordinator hands a new partition with its rows during a move: their keys as the old partitions that owned them hold them. */
async function peekFor(before: Stub[], settings: DedupSettings, rows: PartitionRow[]): Promise<MovedKey[]> {
  const byOld = new Map<number, string[]>();
  for (const r of rows) {
    const p = ownerOf(r.key, { partitions: before.length });
    (byOld.get(p) ?? byOld.set(p, []).get(p)!).push(stateKeyFor(settings, r));
  }
  return (await Promise.all([...byOld].map(([p, keys]) => before[p].peek("e1", keys)))).flat();
}

async function receiptsOf(set: Stub[]): Promise<StateReceipt[]> {
  const out: StateReceipt[] = [];
  for (const p of set) for (const e of await p.list("e1", "", 10_000)) out.push(...(await p.lookup("e1", e.key)));
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

/** The receipts a state reader gives during a move: a key's new owner's, else its old owner's (which may still hold it). */
async function receiptsDuringMove(old: Stub[], moved: Stub[]): Promise<StateReceipt[]> {
  const byKey = new Map<string, StateReceipt>();
  for (const r of await receiptsOf(old)) byKey.set(r.key, r);
  for (const r of await receiptsOf(moved)) byKey.set(r.key, r);
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
}

/**
 * Every old partition's keys, a bucket at a time, into the new set by
 * `settings.mode`'s routing key, each bucket then forgotten where it was;
 * `twice`: each bucket taken in again (a move resumed after a crash).
 */
async function move(from: Stub[], to: Stub[], settings: DedupSettings, twice: boolean): Promise<number> {
  let moved = 0;
  for (const p of from) {
    const { watermark } = await p.describe("e1");
    for (let after: number | null = null; ; ) {
      const next = await p.handOut("e1", after);
      if (!next) break;
      if ("hashed" in next) throw new Error("a hashed partition hands out no keys");
      const byOwner = new Map<number, MovedKey[]>();
      for (const m of next.keys) {
        const q = ownerOf(routingKeyOf(m.key, m.eventTime, settings.mode), { partitions: to.length });
        (byOwner.get(q) ?? byOwner.set(q, []).get(q)!).push(m);
      }
      for (const [q, keys] of byOwner) {
        const first = await to[q].takeIn("e1", settings, watermark, keys);
        moved += first.taken;
        if (twice) expect((await to[q].takeIn("e1", settings, watermark, keys)).taken).toBe(0);
      }
      expect((await p.forgetBucket("e1", next.bucket)).removed).toBe(next.keys.length);
      after = next.bucket;
    }
  }
  return moved;
}

type Batch = { keys: { k: number; t: number; v: number }[]; watermark: number };

/** How the new partitions get the old ones' keys: all moved first; asked for with each batch (peek, then kept in the apply); asked for, then all moved after the first batch. */
type Way = "bulk" | "read-through" | "read-through, then bulk";

/**
 * Batches into `from` old partitions (and a control set alike), then the
 * new map's `to` partitions take over `way`'s way, and more batches go to
 * both: the new set's decisions, and the keys and receipts a state reader
 * finds during and after the move, are the control's.
 */
async function check(settings: DedupSettings, before: Batch[], after: Batch[], from: number, to: number, twice: boolean, way: Way = "bulk", crashed?: Batch) {
  const id = ++run;
  const set = (label: string, n: number) => Array.from({ length: n }, (_, p) => env.PARTITION.getByName(`moves-${id}-${label}/${p}`) as Stub);
  const [old, moved, control] = [set("old", from), set("new", to), set("control", from)];
  const t0 = Date.UTC(2026, 0, 1);
  // The global watermark never goes back, so each batch's is at least the one before's (a partition's own never passes it).
  let high = 0;
  const wmOf = (w: number) => (settings.hasEventTime ? t0 + (high = Math.max(high, w)) * MIN : 0);
  let b = 0;
  for (const batch of before) {
    const name = `api\nbatch-${++b}`;
    const dOld = await applyTo(old, name, settings, batch, wmOf(batch.watermark), t0);
    expect(await applyTo(control, name, settings, batch, wmOf(batch.watermark), t0)).toBe(dOld);
  }
  // A micro-batch that reached only the even old partitions and never committed: its decisions there wait in their ledgers for its retry.
  const crashedName = "api\ncrashed";
  if (crashed) {
    const { rows } = route(crashed, from, t0);
    const wm = wmOf(crashed.watermark);
    for (const set of [old, control])
      for (const [p, list] of rows)
        if (p % 2 === 0)
          await set[p].applyGroup({ epoch: "e1", group: "g-crashed", watermark: wm, entries: [{ batch: crashedName, settings, rows: rowColumns(list) }] });
  }
  const seen = { sealed: await counted(old, "SELECT count(*) AS n FROM segments"), conflicts: await counted(old, "SELECT count(*) AS n FROM receipts") };
  // The move runs at the stream's watermark: every old partition raised to it first, as the Coordinator's eviction does.
  for (const p of [...old, ...control]) await p.advance("e1", wmOf(high));
  const truth = await receiptsOf(old);
  // The switch: each old partition's decisions of micro-batches not yet committed go to each of its successors.
  for (const [p, stub] of old.entries()) {
    const entries = await stub.handOutDecisions("e1");
    for (const q of successors(p, from, to)) await moved[q].takeDecisions("e1", entries);
  }
  if (way === "bulk") {
    expect(await move(old, moved, settings, twice)).toBe(truth.length);
    expect(await receiptsOf(moved)).toEqual(truth);
    expect(await receiptsOf(old)).toEqual([]);
  }
  // Each new partition's watermark carried over from the old ones it took keys from: new batches are judged alike; the crashed one's retry first.
  const next = crashed ? [crashed, ...after] : after;
  for (const [i, batch] of next.entries()) {
    const name = crashed && i === 0 ? crashedName : `api\nbatch-${++b}`;
    const want = await applyTo(control, name, settings, batch, wmOf(batch.watermark), t0);
    expect(await applyTo(moved, name, settings, batch, wmOf(batch.watermark), t0, way === "bulk" ? undefined : old)).toBe(want);
    if (way === "read-through, then bulk" && i === 0) await move(old, moved, settings, twice);
  }
  // Again every partition raised to the watermark: the same keys are remembered.
  for (const p of [...old, ...moved, ...control]) await p.advance("e1", wmOf(high));
  const expected = await receiptsOf(control);
  expect(await receiptsDuringMove(old, moved)).toEqual(expected);
  if (way !== "read-through") expect(await receiptsOf(moved)).toEqual(expected);
  return seen;
}

const counted = async (set: Stub[], query: string) =>
  (await Promise.all(set.map((p) => runInDurableObject(p, (_o, state) => state.storage.sql.exec<{ n: number }>(query).one().n)))).reduce((a, b) => a + b, 0);

describe("keys moved between partitions", () => {
  const SETTINGS: [string, DedupSettings][] = [
    ["within-watermark", { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true }],
    ["event-time-key", { mode: "event-time-key", delay: 3 * MIN, hasEventTime: true }],
    ["global", { mode: "global", delay: 0, hasEventTime: false }],
  ];
  for (const [name, settings] of SETTINGS) {
    it(`${name}: moved, read through or both, the new partitions judge as the old ones would, with the same keys and receipts`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(batchArb, { minLength: 1, maxLength: 6 }),
          fc.array(batchArb, { minLength: 1, maxLength: 3 }),
          fc.integer({ min: 1, max: 4 }),
          fc.integer({ min: 1, max: 5 }),
          fc.boolean(),
          fc.constantFrom<Way>("bulk", "read-through", "read-through, then bulk"),
          fc.option(batchArb, { nil: undefined }),
          async (before, after, from, to, twice, way, crashed) => {
            await check(settings, before, after, from, to, twice, way, crashed);
          },
        ),
        { numRuns: 12 },
      );
    }, 120_000);
  }

  it("sealed segments, copies dropped against their keys and conflicts move too", async () => {
    const settings: DedupSettings = { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true };
    // Five batches of 900 rows over 2,500 keys: each seals segments, repeats keys of sealed ones, and changes some copies.
    const big = (b: number): Batch => ({
      keys: Array.from({ length: 900 }, (_, i) => {
        const k = (i * 7 + b * 300) % 2_500;
        return { k, t: k % 20, v: (k + b) % 11 === 0 ? 1 : 0 };
      }),
      watermark: 2 * b,
    });
    for (const way of ["bulk", "read-through", "read-through, then bulk"] as const) {
      const seen = await check(settings, [0, 1, 2, 3, 4].map(big), [big(6), big(7)], 2, 3, true, way, big(5));
      expect(seen.sealed).toBeGreaterThan(0);
      expect(seen.conflicts).toBeGreaterThan(0);
    }
  }, 120_000);

  it.each([false, true])("peek answers remembered keys whole, and a partition that takes them in answers alike (hashed: %s)", async (hashedKeys) => {
    const settings: DedupSettings = { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true, hashedKeys };
    const [old, fresh] = ["old", "new"].map((label) => env.PARTITION.getByName(`peek-${hashedKeys}-${label}/0`) as Stub);
    const t0 = Date.UTC(2026, 0, 1);
    for (let b = 0; b < 4; b++) {
      const rows = Array.from({ length: 900 }, (_, i) => {
        const k = (i * 7 + b * 300) % 2_500;
        return { index: i, key: `["order-${k}"]`, eventTime: t0 + (k % 20) * MIN, digest: contentDigest({ v: (k + b) % 11 === 0 ? 1 : 0 }, []) };
      });
      await applyOne(old, { epoch: "e1", batch: `api\nbatch-${b}`, watermark: t0 + 2 * b * MIN, settings, rows });
    }
    const asked = Array.from({ length: 300 }, (_, i) => `["order-${i * 9}"]`); // 0 … 2,691: some were never sent
    const peeked = await old.peek("e1", asked);
    const receipt = async (p: Stub, key: string) => {
      const [r] = await p.lookup("e1", key);
      return r && { batch: r.batch, dropped: r.dropped, conflicts: r.conflicts, expiresAt: r.expiresAt };
    };
    const want = (await Promise.all(asked.map(async (k) => [k, await receipt(old, k)] as const))).filter(([, r]) => r);
    expect(want.length).toBeGreaterThan(100);
    expect(want.some(([, r]) => r!.dropped > 0) && want.some(([, r]) => r!.conflicts > 0)).toBe(true);
    expect(peeked.map((m) => [m.key, { batch: m.batch, dropped: m.dropped, conflicts: m.conflicts, expiresAt: m.expiresAt }]).sort()).toEqual(want.sort());
    const { watermark } = await old.describe("e1");
    expect((await fresh.takeIn("e1", settings, watermark, peeked)).taken).toBe(want.length);
    for (const [k, r] of want) expect(await receipt(fresh, k)).toEqual(r);
  });

  it("a hashed partition hands out none of its keys (they are hashes under its own secret), and says so", async () => {
    const p = env.PARTITION.getByName("moves-hashed/0") as Stub;
    const settings: DedupSettings = { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true, hashedKeys: true };
    await applyOne(p, { epoch: "e1", batch: "api\nb1", watermark: 0, settings, rows: [{ index: 0, key: '["a"]', eventTime: 1_000 }] });
    expect(await p.handOut("e1", null)).toEqual({ hashed: true });
  });
});

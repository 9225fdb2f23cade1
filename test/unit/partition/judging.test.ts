/**
 * The Partition's judging (src/partition/judging.ts), in memory: no SQL, so
 * it runs here without workerd. The storage around it is tested in
 * test/integration/partition/partition.test.ts and compact-state.test.ts.
 */
import { describe, expect, test } from "vitest";
import type { DedupSettings } from "../../../src/stream/dedup";
import { fixLayout, gapsOf, judgeAll, keyIdOf, NamesInUse, wantedKeys, workOf, type Entry } from "../../../src/partition/judging";
import type { Held } from "../../../src/partition/layout";
import { freshMeta, type PartitionMeta } from "../../../src/partition/meta";

const MIN = 60_000;
const WW: DedupSettings = { mode: "within-watermark", delay: 60 * MIN, hasEventTime: true };
const t0 = Date.UTC(2026, 0, 1);

const metaOf = (watermark = 0): PartitionMeta => ({ ...freshMeta("e1"), watermark });
const row = (index: number, id: string, eventTime: number | null) => ({ index, key: JSON.stringify([id]), eventTime });
const entry = (batch: string, rows: ReturnType<typeof row>[], settings = WW): Entry => ({ batch, settings, rows });

describe("judging a call in memory", () => {
  test("rows with a recorded decision keep it; only the others are judged", () => {
    const [w] = workOf([entry("s\nb1", [row(0, "a", t0), row(1, "b", t0)])], new Map([["s\nb1", new Map([[0, "e" as const]])]]));
    expect(w.fresh.map((r) => r.index)).toEqual([1]);
    expect(w.judged).toBe(true);
    const [replay] = workOf([entry("s\nb1", [row(0, "a", t0)])], new Map([["s\nb1", new Map([[0, "e" as const]])]]));
    expect(replay).toMatchObject({ fresh: [], judged: false });
  });

  test("the layout is fixed by the first row that is not late, and stays", () => {
    const meta = metaOf(t0);
    expect(fixLayout(meta, workOf([entry("s\nb1", [row(0, "late", t0 - MIN)])], new Map()))).toBeNull();
    expect(meta.width).toBeNull();
    const l = fixLayout(meta, workOf([entry("s\nb2", [row(0, "late", t0 - MIN), row(1, "a", t0 + MIN)])], new Map()));
    expect(l).toEqual({ hashed: 0, hashKey: null, width: 7.5 * MIN, base: Math.floor((t0 + 61 * MIN) / (7.5 * MIN)) });
    expect(fixLayout(meta, [])).toEqual(l);
  });

  test("a hashed layout draws its secret, and its stored keys are worked out once each", () => {
    const meta = metaOf();
    const l = fixLayout(meta, workOf([entry("s\nb1", [row(0, "a", t0)], { ...WW, hashedKeys: true })], new Map()))!;
    expect(l.hashed).toBe(2);
    expect(l.hashKey).toEqual(expect.any(String));
    const id = keyIdOf(l);
    expect(id('["a"]')).toMatch(/^-?\d+$/);
    expect(id('["a"]')).toBe(id('["a"]'));
    expect(keyIdOf(null)('["a"]')).toBe('["a"]');
  });

  test("first copies are kept and added, later ones dropped; names are read only when a batch stores keys", () => {
    const meta = metaOf();
    const work = workOf(
      [entry("s\nb1", [row(0, "a", t0), row(1, "a", t0 + 2 * MIN), row(2, "b", t0)]), entry("s\nb2", [row(0, "b", t0 + 5 * MIN)])],
      new Map(),
    );
    const l = fixLayout(meta, work)!;
    const id = keyIdOf(l);
    expect([...wantedKeys(meta.watermark, id, work)]).toEqual(['["a"]', '["b"]']);
    const held = new Map<string, Held>();
    let reads = 0;
    const names = new NamesInUse(() => (reads++, { n: 7, b: [] }));
    const r = judgeAll(meta.watermark, l, id, held, names, work);
    expect(r).toEqual({ decisions: ["ede", "d"], inserted: 2, judged: 4, ledger: [expect.any(Array), expect.any(Array)] });
    expect(reads).toBe(1);
    expect(names.open).toMatchObject({ n: 7, b: ["s\nb1"] });
    expect(held.get('["a"]')).toMatchObject({ added: true, n: 7, expiresAt: t0 + WW.delay, dropped: 1, conflicts: 0 });
    expect(held.get('["b"]')).toMatchObject({ added: true, n: 7, dropped: 1 });
    const { gaps, wanted } = gapsOf(l, id, held, work);
    expect(gaps).toEqual([[2 * MIN], [5 * MIN]]);
    expect(wanted).toEqual([]);
  });

  test("without a layout every fresh row is late, and nothing is named", () => {
    const meta = metaOf(t0);
    const work = workOf([entry("s\nb1", [row(0, "a", t0 - MIN)])], new Map());
    const names = new NamesInUse(() => {
      throw new Error("no read");
    });
    expect(judgeAll(meta.watermark, null, keyIdOf(null), new Map(), names, work)).toMatchObject({ decisions: ["l"], inserted: 0, judged: 1 });
    expect(names.open).toBeNull();
  });
});

/**
 * Compact state (src/partition/key-store.ts, layout v3): keys clustered by expiry
 * bucket with no per-key index, text or 64-bit hashed keys. Real partitions
 * are driven side by side with the pure dedup step over a remembered map: the
 * decisions, the key count after every eviction and the listed state must be
 * the model's, whatever the order of batches, watermarks and bucket crossings.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Partition } from "../../../src/partition/partition";
import type { PartitionRow } from "../../../src/partition/protocol";
import { rowColumns } from "../../../src/stream/row-columns";
import { applyBatch, isExpired, type DedupSettings } from "../../../src/stream/dedup";
import { keyedKeyHashLabel } from "../../../src/stream/keyed-key-hash";
import { partitionFor } from "../../../src/stream/partition-for";
import { contentDigest } from "../../../src/stream/content";
import { applyOne, at, call, client, createStream, json, output, post, storedEntries } from "../helpers";

let n = 0;
const fresh = () => env.PARTITION.getByName(`compact-${++n}/0`) as DurableObjectStub<Partition>;

/** How a partition lists a hashed key: by its keyed hash (SipHash-2-4 under the secret it drew, src/stream/keyed-key-hash.ts). */
async function hashLabel(p: DurableObjectStub<Partition>): Promise<(stateKey: string) => string> {
  const secret = await runInDurableObject(p, (_o, state) => state.storage.sql.exec<{ hash_key: string }>("SELECT hash_key FROM meta").one().hash_key);
  return (stateKey) => keyedKeyHashLabel(secret, stateKey);
}

type Op = { kind: "apply"; watermark: number; rows: [string, number][] } | { kind: "advance"; watermark: number };

/** The reference: remembered state key → expiry, evicted at max(partition wm, given wm) before each step. */
class Model {
  keys = new Map<string, number | null>();
  watermark = 0;
  constructor(readonly settings: DedupSettings) {}
  evict(watermark: number) {
    this.watermark = Math.max(this.watermark, watermark);
    for (const [k, e] of this.keys) if (isExpired(e, this.watermark)) this.keys.delete(k);
  }
  apply(rows: PartitionRow[], watermark: number): string {
    this.evict(watermark);
    const r = applyBatch(this.settings, this.watermark, rows, (k) => this.keys.has(k));
    for (const i of r.inserts) this.keys.set(i.stateKey, i.expiresAt);
    return r.decisions.join("");
  }
}

const MIN = 60_000;
const ops = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("apply" as const),
        watermark: fc.integer({ min: 0, max: 40 * MIN }),
        rows: fc.array(fc.tuple(fc.constantFrom("A", "B", "C", "D", "E", "F"), fc.integer({ min: 0, max: 40 * MIN })), { maxLength: 12 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("advance" as const), watermark: fc.integer({ min: 0, max: 40 * MIN }) }) },
  ),
  { maxLength: 14 },
);

/**
 * A partition's reported next expiry is a lower bound of its keys' earliest:
 * the eviction fan-out visits only partitions whose bound the watermark
 * reaches (src/coordinator/coordinator.ts evictionIfDue), so a null or too
 * high a bound would leave expired keys in place.
 */
function expectLowerBound(nextExpiry: number | null, model: Model): void {
  const earliest = Math.min(...[...model.keys.values()].map((e) => e ?? Infinity));
  if (!Number.isFinite(earliest)) return;
  expect(nextExpiry).not.toBeNull();
  expect(nextExpiry!).toBeLessThanOrEqual(earliest);
}

describe("compact state against the model", () => {
  for (const [name, settings] of [
    ["within-watermark, text keys", { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true }],
    ["within-watermark, hashed keys", { mode: "within-watermark", delay: 6 * MIN, hasEventTime: true, hashedKeys: true }],
    ["event-time-key, hashed keys", { mode: "event-time-key", delay: 4 * MIN, hasEventTime: true, hashedKeys: true }],
    ["global, hashed keys", { mode: "global", delay: 0, hasEventTime: false, hashedKeys: true }],
  ] as [string, DedupSettings][]) {
    it(`${name}: decisions, evictions and listed keys`, async () => {
      await fc.assert(
        fc.asyncProperty(ops, async (steps) => {
          const p = fresh();
          const model = new Model(settings);
          let batch = 0;
          for (const op of steps) {
            if (op.kind === "advance") {
              model.evict(op.watermark);
              const r = await p.advance("e1", op.watermark);
              expect(r.rows).toBe(model.keys.size);
              expectLowerBound(r.nextExpiry, model);
              continue;
            }
            const rows = op.rows.map(([key, t], index) => ({ index, key, eventTime: settings.hasEventTime ? t : null }));
            const want = model.apply(rows, op.watermark);
            const got = await applyOne(p, { epoch: "e1", batch: `s\n${++batch}`, watermark: op.watermark, settings, rows });
            expect(got.decisions).toBe(want);
            expect(got.rows).toBe(model.keys.size);
            expectLowerBound(got.nextExpiry, model);
          }
          // The state reader lists exactly the model's keys (hashed ones by their label).
          const listed = await p.list("e1", "", 1000);
          const label = settings.hashedKeys && model.keys.size > 0 ? await hashLabel(p) : (k: string) => k;
          expect(listed.map((e) => [e.key, e.expiresAt]).sort()).toEqual([...model.keys].map(([k, e]) => [label(k), e]).sort());
        }),
        { numRuns: 12 },
      );
    });
  }
});

describe("compact state: size and eviction work", () => {
  it("a hashed key costs at most 36 bytes of storage, every table counted, with its content digest and receipt (DESIGN §11; 39.9 B before version 7's relative b and e)", async () => {
    const p = fresh();
    const settings: DedupSettings = { mode: "within-watermark", delay: 2 * 3_600_000, hasEventTime: true, hashedKeys: true };
    const t0 = Date.UTC(2026, 0, 1);
    let last = { rows: 0, bytes: 0 };
    for (let b = 0; b < 40; b++) {
      // Each row with its 64-bit content digest, as an id-keyed stream sends it (src/stream/content.ts).
      const rows = Array.from({ length: 1000 }, (_, i) => ({
        index: i,
        key: `["evt_${b}_${i}_${(i * 7919) % 10007}"]`,
        eventTime: t0 + (b * 1000 + i) * 200,
        digest: contentDigest({ id: `evt_${b}_${i}`, n: i }, []),
      }));
      last = await applyOne(p, { epoch: "e1", batch: `s\nb${b}`, watermark: 0, settings, rows });
      await p.applyGroup({ epoch: "e1", watermark: 0, entries: [], forget: [`s\nb${b}`] }); // committed: its ledger is dropped
    }
    expect(last.rows).toBe(40_000);
    console.log(`compact state: ${(last.bytes / last.rows).toFixed(1)} B per hashed key with its digest`);
    // 33.5 B measured: b is a byte (buckets counted from the partition's first), e three (from its bucket's start).
    expect(last.bytes / last.rows).toBeLessThanOrEqual(36);
  });

  it("a hashed key costs at most 38 bytes when a fifth of the rows are duplicates: dropped copies are counted in the key's row (version 6; 45.3 B with a receipts row each, 41.4 B before version 7)", async () => {
    const p = fresh();
    const settings: DedupSettings = { mode: "within-watermark", delay: 2 * 3_600_000, hasEventTime: true, hashedKeys: true };
    const t0 = Date.UTC(2026, 0, 1);
    const digestOf = (id: string) => contentDigest({ id }, []);
    let last = { rows: 0, bytes: 0 };
    let dropped = 0;
    const repeats = new Map<number, number>();
    for (let b = 0; b < 40; b++) {
      // As the bench sends them (bench/run.ts): ~20% of the rows repeat one of the last 500 new ids.
      const rows = Array.from({ length: b === 0 ? 1000 : 1250 }, (_, i) => {
        const n = i < 1000 ? b * 1000 + i : b * 1000 - 1 - ((i * 7919) % 500);
        if (i >= 1000) repeats.set(n, (repeats.get(n) ?? 0) + 1);
        return { index: i, key: `["evt_${n}"]`, eventTime: t0 + n * 200, digest: digestOf(`evt_${n}`) };
      });
      const r = await applyOne(p, { epoch: "e1", batch: `s\nb${b}`, watermark: 0, settings, rows });
      dropped += [...r.decisions].filter((d) => d === "d").length;
      last = r;
      await p.applyGroup({ epoch: "e1", watermark: 0, entries: [], forget: [`s\nb${b}`] });
    }
    expect(last.rows).toBe(40_000);
    expect(dropped).toBe(39 * 250);
    console.log(`compact state: ${(last.bytes / last.rows).toFixed(1)} B per hashed key with its digest, ${dropped} copies dropped`);
    // 35.2 B measured: a count in t widens it from 1 to 6 bytes on the keys that have one (see docs/concepts/state.md).
    expect(last.bytes / last.rows).toBeLessThanOrEqual(38);
    // The counts stay exact: each key's receipt says how many copies were dropped against it.
    const [most] = [...repeats].sort((a, b) => b[1] - a[1]);
    for (const [n, count] of [most, [...repeats][0], [...repeats][repeats.size - 1]]) {
      expect((await p.lookup("e1", `["evt_${n}"]`))[0]).toMatchObject({ batch: `s\nb${Math.floor(n / 1000)}`, dropped: count, conflicts: 0 });
    }
  });

  it("a text key of 18 characters costs at most 60 bytes with its digest and receipt (49 B before digests), batches in event-time order", async () => {
    const p = fresh();
    const settings: DedupSettings = { mode: "within-watermark", delay: 2 * 3_600_000, hasEventTime: true };
    const t0 = Date.UTC(2026, 0, 1);
    let last = { rows: 0, bytes: 0 };
    for (let b = 0; b < 40; b++) {
      const rows = Array.from({ length: 1000 }, (_, i) => ({
        index: i,
        key: `["evt_${String(b * 1000 + i).padStart(11, "0")}"]`,
        eventTime: t0 + (b * 1000 + i) * 200,
        digest: contentDigest({ id: b * 1000 + i }, []),
      }));
      last = await applyOne(p, { epoch: "e1", batch: `s\nb${b}`, watermark: 0, settings, rows });
      await p.applyGroup({ epoch: "e1", watermark: 0, entries: [], forget: [`s\nb${b}`] });
    }
    console.log(`compact state: ${(last.bytes / last.rows).toFixed(1)} B per 18-character text key with its digest`);
    expect(last.bytes / last.rows).toBeLessThanOrEqual(60);
    // The batch is named in the key's own row (r): no receipt row per key, no row per batch.
    expect((await p.lookup("e1", '["evt_00000012345"]'))[0]).toMatchObject({ batch: "s\nb12", dropped: 0 });
  });

  /** Runs fn inside the object with its `sql` counted: the statements, their texts, and the rows they wrote and read. */
  const counting = <T>(p: DurableObjectStub<Partition>, fn: (obj: Partition) => T | Promise<T>) =>
    runInDurableObject(p, async (obj) => {
      const o = obj as unknown as { sql: SqlStorage };
      const real = o.sql;
      const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
      const texts: string[] = [];
      const asked: string[] = [];
      o.sql = new Proxy(real, {
        get: (t, prop) =>
          prop === "exec"
            ? (...a: Parameters<SqlStorage["exec"]>) => {
                const c = t.exec(...a);
                texts.push(a[0]);
                if (/FROM segments WHERE s IN/.test(a[0])) asked.push(String(a[1]));
                cursors.push(c);
                return c;
              }
            : Reflect.get(t, prop, t),
      });
      try {
        const result = await fn(obj);
        return {
          result,
          statements: cursors.length,
          texts,
          segmentReads: texts.filter((q) => /FROM segments WHERE s IN/.test(q)).length,
          // the segments those reads asked for (their numbers, bound as JSON: rowsRead would count a scan's rows)
          segmentsRead: asked.reduce((n, list) => n + (JSON.parse(list) as number[]).length, 0),
          written: cursors.reduce((n, c) => n + c.rowsWritten, 0),
          read: cursors.reduce((n, c) => n + c.rowsRead, 0),
        };
      } finally {
        o.sql = real;
      }
    });

  it.each([
    [false, 50],
    [true, 50],
    [false, 2_000],
    [true, 2_000],
  ])(
    "an apply writes one row whatever its rows: its keys and drop counts ride in the open segment of the meta row (hashed: %s; %i keys stored before)",
    async (hashedKeys, before) => {
      const p = env.PARTITION.getByName(`statements-${hashedKeys}-${before}/0`) as DurableObjectStub<Partition>;
      const settings: DedupSettings = { mode: "within-watermark", delay: 3_600_000, hasEventTime: true, hashedKeys };
      const t0 = Date.UTC(2026, 0, 1);
      const row = (index: number, id: number, digest = String(id)) => ({ index, key: `["evt_${id}"]`, eventTime: t0 + id, digest });
      await p.applyGroup({
        epoch: "e1",
        group: "g1",
        watermark: 0,
        entries: [{ batch: "s\nb1", settings, rows: rowColumns(Array.from({ length: before }, (_, i) => row(i, 10_000 + i))) }],
      });
      // Two entries: 40 new keys, 10 copies of b1's keys (one key twice), 5 copies of keys the first entry adds.
      const first = Array.from({ length: 40 }, (_, i) => row(i, 100 + i));
      const second = [
        ...Array.from({ length: 10 }, (_, i) => row(i, 10_000 + (i === 9 ? 0 : i))),
        ...Array.from({ length: 5 }, (_, i) => row(10 + i, 100 + i)),
      ];
      const counted = await counting(p, (obj) =>
        obj.applyGroup({
          epoch: "e1",
          group: "g2",
          watermark: 0,
          forget: ["g1"],
          entries: [
            { batch: "s\nb2", settings, rows: rowColumns(first) },
            { batch: "s\nb3", settings, rows: rowColumns(second) },
          ],
        }),
      );
      expect(counted.result.decisions).toEqual(["e".repeat(40), "d".repeat(15)]);
      // 50 keys fit the open segment: nothing to read. 2,000 were sealed into segment rows: one read, of those that may hold b3's copies.
      expect(counted.segmentReads).toBe(before > 1_000 ? 1 : 0);
      expect(counted.statements).toBe(before > 1_000 ? 2 : 1);
      expect(counted.written).toBe(1); // the meta row
      expect((await p.lookup("e1", '["evt_10000"]'))[0]).toMatchObject({ batch: "s\nb1", dropped: 2 });
      expect((await p.lookup("e1", '["evt_10001"]'))[0]).toMatchObject({ batch: "s\nb1", dropped: 1 });
      expect((await p.lookup("e1", '["evt_104"]'))[0]).toMatchObject({ batch: "s\nb2", dropped: 1 });
      // The same after a restart: everything is in storage.
      await evictDurableObject(p);
      expect((await p.lookup("e1", '["evt_10000"]'))[0]).toMatchObject({ batch: "s\nb1", dropped: 2 });
      expect((await p.lookup("e1", '["evt_104"]'))[0]).toMatchObject({ batch: "s\nb2", dropped: 1 });
    },
  );

  it.each([false, true])(
    "an apply whose keys are all new reads no segment: the segments' filters answer (hashed: %s); after a restart they are read back from their rows and still find every key",
    async (hashedKeys) => {
      const p = env.PARTITION.getByName(`filters-${hashedKeys}/0`) as DurableObjectStub<Partition>;
      const settings: DedupSettings = { mode: "within-watermark", delay: 3_600_000, hasEventTime: true, hashedKeys };
      const t0 = Date.UTC(2026, 0, 1);
      // Keys over three hours of event time: about a dozen 15-minute buckets, sealed into segment rows.
      const row = (index: number, id: number) => ({ index, key: `["evt_${id}"]`, eventTime: t0 + id * 5_000 });
      await applyOne(p, { epoch: "e1", batch: "s\nb1", watermark: 0, settings, rows: Array.from({ length: 2160 }, (_, i) => row(i, i)) });
      const segments = await runInDurableObject(p, (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM segments").one().n);
      expect(segments).toBeGreaterThan(10);
      const apply = (rows: ReturnType<typeof row>[], batch: string) =>
        counting(p, (obj) =>
          obj.applyGroup({ epoch: "e1", group: `g-${batch}`, watermark: 0, entries: [{ batch: `s\n${batch}`, settings, rows: rowColumns(rows) }] }),
        );
      const fresh = await apply(
        Array.from({ length: 60 }, (_, i) => row(i, 3000 + i)),
        "b2",
      );
      expect(fresh.result.decisions[0]).toBe("e".repeat(60));
      // Each new key is probed in every segment's filter (60 × ~12 probes at ~4·10⁻⁵ false "maybe" each):
      // none read almost always, but a hashed partition's keys hash under its own random secret, so a
      // false "maybe" (one segment read) in ~3% of runs, three in ~1 in 250,000. Without filters all would be read.
      if (hashedKeys) expect(fresh.segmentsRead).toBeLessThanOrEqual(2);
      else expect(fresh.segmentReads).toBe(0);
      await evictDurableObject(p);
      // The index is read back (filters, not data); a copy of any stored key, early or late, sealed or open, is still found.
      const again = await apply([row(0, 0), row(1, 5000), row(2, 2159), row(3, 3059), row(4, 1080)], "b3");
      expect(again.result.decisions[0]).toBe("dedd" + "d");
      expect(again.segmentReads).toBe(1);
      expect(again.texts.filter((q) => /FROM segments$/.test(q.trim())).length).toBe(1); // the index, once
    },
  );

  it("evicting deletes whole segments and reads nothing per key: the watermark's bucket is trimmed in memory, by expiry", async () => {
    const p = fresh();
    const settings: DedupSettings = { mode: "within-watermark", delay: 40 * MIN, hasEventTime: true, hashedKeys: true }; // 10-minute buckets
    const rows = Array.from({ length: 4000 }, (_, i) => ({ index: i, key: `k${i}`, eventTime: i * 600 })); // 40 minutes of keys, 100 per minute
    await applyOne(p, { epoch: "e1", batch: "s\nb", watermark: 0, settings, rows });
    const advance = (wm: number) => counting(p, (obj) => obj.advance("e1", wm));
    // Expiries run from 40 to 80 min (k0 was late). 45 min enters the 40-50 min bucket: its expiries are read once.
    expect((await advance(45 * MIN)).result).toMatchObject({ removed: 500, rows: 3499 });
    // Six seconds later ten keys expire: nothing read, nothing written but the meta row.
    const step = await advance(45 * MIN + 6000);
    expect(step.result).toMatchObject({ removed: 10, rows: 3489 });
    expect(step.read).toBeLessThan(5);
    expect(step.written).toBe(1);
    // Three buckets pass whole: a row per segment deleted, not one per key (2,990 go).
    const far = await advance(75 * MIN);
    expect(far.result).toMatchObject({ removed: 2990, rows: 499 });
    expect(far.written).toBeLessThan(10);
    const left = await runInDurableObject(p, (_o, state) => ({
      tables: state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name IN ('keys', 'front')")
        .toArray()
        .map((r) => r.name),
      stored: storedEntries(state.storage.sql),
    }));
    expect(left.tables).toEqual([]); // no row per key anywhere, no copy for expiry
    // The 75-80 min bucket (buckets are an eighth of the delay) is still stored whole; the 499 keys not expired are among it.
    expect(left.stored.sealed.length + left.stored.open.length).toBe(500);
    expect((await p.list("e1", "", 1000)).length).toBe(499);
    await evictDurableObject(p);
    expect((await advance(76 * MIN)).result).toMatchObject({ removed: 100, rows: 399 });
  });
});

describe("a stream with stateKeys: hashed", () => {
  it("dedups as a text stream does, lists hashes in its state reader, finds a key by row, and keeps the choice bound", async () => {
    const body = { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", partitions: 2 };
    await createStream("hashed-keys", { ...body, stateKeys: "hashed" });
    await createStream("text-keys", body);
    const rows = [
      { id: "a", ts: at(10, 0) },
      { id: "b", ts: at(10, 1) },
      { id: "a", ts: at(10, 2) },
      { id: "c", ts: at(10, 30) },
      { id: "a", ts: at(10, 3) },
    ];
    for (const stream of ["hashed-keys", "text-keys"]) {
      expect(await post(stream, rows.slice(0, 3))).toMatchObject({ emitted: 2, duplicates: 1 });
      expect(await post(stream, rows.slice(3))).toMatchObject({ emitted: 1, duplicates: 1, watermarkAfter: at(10, 20) });
    }
    expect(await output("hashed-keys")).toEqual(await output("text-keys"));
    const listed = async (stream: string) => {
      const keys: { key: string; expiresAt: number }[] = [];
      for (const p of [0, 1]) keys.push(...(await json<{ keys: typeof keys }>(call("GET", `/v1/streams/${stream}/state?partition=${p}`))).keys);
      return keys;
    };
    // Only c is left once both have evicted (a and b expire at 10:10 and 10:11, the watermark is 10:20).
    for (let i = 0; i < 100 && (await listed("text-keys")).length + (await listed("hashed-keys")).length > 2; i++) await new Promise((r) => setTimeout(r, 100));
    const text = await listed("text-keys");
    expect(text.map((k) => k.key)).toEqual(['["c"]']);
    const hashedC = (await hashLabel(env.PARTITION.getByName(`hashed-keys/${partitionFor('["c"]', 2)}`) as DurableObjectStub<Partition>))('["c"]');
    expect(await listed("hashed-keys")).toEqual([{ key: hashedC, eventTime: null, expiresAt: text[0].expiresAt }]);
    // Asked by row: the key's entry from the partition the row routes to, or none.
    const byRow = async (stream: string, row: unknown, partition?: number) =>
      call("GET", `/v1/streams/${stream}/state?row=${encodeURIComponent(JSON.stringify(row))}${partition === undefined ? "" : `&partition=${partition}`}`);
    for (const [stream, key] of [
      ["text-keys", '["c"]'],
      ["hashed-keys", hashedC],
    ]) {
      const found = await client.state(stream, { row: { id: "c", ts: at(10, 30) } });
      // With its receipt (DESIGN §11): c was kept by the second commit; hashed state implies its event time from the expiry.
      expect(found.keys).toEqual([
        {
          key,
          eventTime: stream === "text-keys" ? at(10, 30) : null,
          expiresAt: text[0].expiresAt,
          kept: { batchId: expect.any(String), source: "default", seq: 2, eventTime: at(10, 30) },
          dropped: 0,
          conflicts: 0,
        },
      ]);
      expect((await json<{ keys: unknown[] }>(byRow(stream, { id: "a", ts: at(10, 0) }))).keys).toEqual([]); // expired
      expect((await json<{ keys: unknown[] }>(byRow(stream, { id: "zz", ts: at(10, 30) }))).keys).toEqual([]); // never sent
      const elsewhere = await byRow(stream, { id: "c", ts: at(10, 30) }, 1 - found.partition);
      expect(elsewhere.status).toBe(400);
      expect(await elsewhere.text()).toContain(`in partition ${found.partition}`);
      const keyless = await byRow(stream, { ts: at(10, 0) });
      expect(keyless.status).toBe(400);
      expect(await keyless.text()).toContain("id");
      expect((await call("GET", `/v1/streams/${stream}/state?row=not-json`)).status).toBe(400);
    }
    const change = await call("PUT", "/v1/streams/hashed-keys", body);
    expect(change.status).toBe(409);
    expect(await change.text()).toContain("stateKeys");
  });
});

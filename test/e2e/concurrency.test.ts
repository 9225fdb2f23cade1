/**
 * Three sources posting interleaved batches at once, with copies of the same
 * keys across sources and event times spread over several delays (so rows are
 * late, keys are evicted and emitted again). Checked against the output only
 * (DESIGN §2.8): the within-watermark guarantee, no loss, per-batch identity,
 * exactly-once output, and the state left behind.
 */
import { describe, expect, test } from "vitest";
import { at, MINUTE, type Outcome, pollUntil, rng, useServer } from "./server";

const { server, api } = useServer();

interface Row {
  id: string;
  ts?: number;
  uid: string;
  batch: string;
}

interface SentBatch {
  batchId: string;
  source: string;
  rows: Row[];
  invalid: number[];
  outcome?: Outcome;
}

const DELAY = 10 * MINUTE;
const SOURCES = ["s0", "s1", "s2"];
const ROUNDS = 10;
const ROWS = 40;
const KEYS = 80;
const SEED = 20240101;

describe("concurrent sources", () => {
  // With four shards (DESIGN §12) each batch is judged by one of four Coordinators: the same guarantees,
  // commit order per shard, and each batch judged by a watermark no newer than the global one.
  test.each([1, 4])("interleaved batches from three sources keep every guarantee (%i shard(s))", async (shards) => {
    const s = `three-sources-${shards}`;
    await api.putStream(s, {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "10 minutes",
      partitions: 4,
      ...(shards > 1 ? { shards } : {}),
      sources: { s0: {}, s1: {}, s2: {} },
    });

    const random = rng(SEED);
    const batches: SentBatch[] = [];
    const bySource = new Map<string, SentBatch[]>();
    for (const source of SOURCES) {
      const list: SentBatch[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const batchId = `${source}-r${r}`;
        const base = at(10) + r * 6 * MINUTE;
        const invalid: number[] = [];
        const rows: Row[] = Array.from({ length: ROWS }, (_, i) => {
          const row: Row = {
            id: `k${Math.floor(random() * KEYS)}`,
            ts: base + Math.round((random() * 23 - 15) * MINUTE), // some behind the watermark
            uid: `${batchId}-${i}`,
            batch: batchId,
          };
          if (random() < 0.02) {
            delete row.ts; // rejected: missing event time
            invalid.push(i);
          }
          return row;
        });
        list.push({ batchId, source, rows, invalid });
      }
      bySource.set(source, list);
      batches.push(...list);
    }

    // Each source sends over two lanes at once (even and odd rounds, each in order), and the
    // three sources run at once: six requests in flight most of the time.
    await Promise.all(
      SOURCES.flatMap((source) =>
        [0, 1].map(async (lane) => {
          for (const b of bySource.get(source)!.filter((_, r) => r % 2 === lane)) {
            b.outcome = await api.ingest(s, b.rows, { source, batchId: b.batchId });
          }
        }),
      ),
    );

    // With one shard every batch is judged by the watermark as the commits before it left it, so the rounds above have late rows.
    const concurrentLate = batches.reduce((n, b) => n + b.outcome!.late, 0);
    if (shards === 1) expect(concurrentLate).toBeGreaterThan(0);
    // With several, a batch is judged by a watermark up to a clock interval old, so in a run this short the
    // rounds above may judge none late. A last batch per source once every shard judges by the global
    // watermark, its rows well behind it: each is late, whatever the clock's pushes did before.
    await pollUntil(
      () => api.stream(s),
      (i) => i.watermark > 0 && i.watermarkApplied === i.watermark,
      10_000,
    );
    for (const source of SOURCES) {
      const batchId = `${source}-behind`;
      const rows: Row[] = Array.from({ length: 5 }, (_, i) => ({ id: `k${i}`, ts: at(10) - 30 * MINUTE, uid: `${batchId}-${i}`, batch: batchId }));
      const b: SentBatch = { batchId, source, rows, invalid: [], outcome: await api.ingest(s, rows, { source, batchId }) };
      expect(b.outcome!.late, batchId).toBe(rows.length);
      bySource.get(source)!.push(b);
      batches.push(b);
    }

    // The global watermark: min over the three declared sources of (max T - delay).
    const maxT = (source: string) => Math.max(...bySource.get(source)!.flatMap((b) => b.rows.filter((r) => r.ts !== undefined).map((r) => r.ts!)));
    const expectedWatermark = Math.min(...SOURCES.map((src) => maxT(src) - DELAY));
    // The most a batch's rows can have been judged by: with one shard, the watermark after its commit; with
    // several, a partition judges by the newest watermark any shard brought it (DESIGN §2.7), never past the global one.
    const judgedAtMost = (o: Outcome) => (shards === 1 ? o.watermarkAfter : expectedWatermark);

    // Per batch: the identity, the rejected rows, and bounds on `late`: a row at or below the
    // batch's watermark is late; a row above the watermark it can have been judged by cannot be.
    for (const b of batches) {
      const o = b.outcome!;
      expect(o.input, b.batchId).toBe(b.rows.length);
      expect(o.emitted + o.duplicates + o.late + o.rejected.length, b.batchId).toBe(o.input);
      expect(
        o.rejected.map((r) => r.index),
        b.batchId,
      ).toEqual(b.invalid);
      const valid = b.rows.filter((r) => r.ts !== undefined);
      expect(o.late, `${b.batchId} late >= rows at or below ${o.watermark}`).toBeGreaterThanOrEqual(valid.filter((r) => r.ts! <= o.watermark).length);
      expect(o.late, `${b.batchId} late <= rows at or below ${judgedAtMost(o)}`).toBeLessThanOrEqual(valid.filter((r) => r.ts! <= judgedAtMost(o)).length);
      expect(o.watermarkAfter).toBeGreaterThanOrEqual(o.watermark);
    }
    const totals = batches.reduce(
      (a, b) => ({ emitted: a.emitted + b.outcome!.emitted, late: a.late + b.outcome!.late, duplicates: a.duplicates + b.outcome!.duplicates }),
      { emitted: 0, late: 0, duplicates: 0 },
    );
    // The scenario is only meaningful if it exercised lateness, duplicates and re-emission.
    expect(totals.late).toBeGreaterThan(0);
    expect(totals.duplicates).toBeGreaterThan(0);
    console.log(`three-sources: ${JSON.stringify(totals)} over ${batches.length} batches`);

    const output = await api.output<Row>(s);
    expect(output.length).toBe(totals.emitted);

    // Exactly once: every output row is an input row, none twice, and each batch's rows match its `emitted`.
    const sent = new Map(batches.flatMap((b) => b.rows.map((r) => [r.uid, r] as const)));
    const uids = new Set<string>();
    for (const r of output) {
      expect(sent.get(r.uid), `output row ${r.uid} was never sent`).toEqual(r);
      expect(uids.has(r.uid), `output row ${r.uid} twice`).toBe(false);
      uids.add(r.uid);
    }
    for (const b of batches) {
      expect(output.filter((r) => r.batch === b.batchId).length, b.batchId).toBe(b.outcome!.emitted);
    }

    // Commit order: the output is the batches' rows batch after batch, in the order of /progress,
    // each batch's rows in input order; and /progress reports what the responses said.
    const progress = await api.progress(s);
    expect(progress.map((r) => r.batchId).sort()).toEqual(batches.map((b) => b.batchId).sort());
    const byId = new Map(batches.map((b) => [b.batchId, b]));
    for (const r of progress) {
      const o = byId.get(r.batchId)!.outcome!;
      expect(r).toMatchObject({
        source: o.source,
        input: o.input,
        emitted: o.emitted,
        duplicates: o.duplicates,
        late: o.late,
        rejected: o.rejected.length,
        watermark: o.watermark,
        watermarkAfter: o.watermarkAfter,
      });
    }
    // Several shards: the output is read shard after shard, each shard's batches in its commit order.
    const shardOf = (seq: number) => Math.floor(seq / 1e12);
    const commitOrder = [...progress]
      .sort((a, b) => shardOf(a.commitSeq) - shardOf(b.commitSeq) || a.commitSeq - b.commitSeq)
      .filter((r) => r.emitted > 0)
      .map((r) => r.batchId);
    const outputOrder = output.map((r) => r.batch).filter((b, i, all) => i === 0 || all[i - 1] !== b);
    expect(outputOrder).toEqual(commitOrder);
    if (shards > 1) expect(new Set(progress.map((r) => shardOf(r.commitSeq))).size).toBe(shards);
    for (const b of batches) {
      const indices = output.filter((r) => r.batch === b.batchId).map((r) => Number(r.uid.split("-").pop()));
      expect(indices, b.batchId).toEqual([...indices].sort((x, y) => x - y));
    }
    for (let k = 0; k < shards; k++) {
      const ofShard = progress.filter((r) => shardOf(r.commitSeq) === k).sort((a, b) => a.commitSeq - b.commitSeq);
      for (let i = 1; i < ofShard.length; i++) expect(ofShard[i].watermarkAfter).toBeGreaterThanOrEqual(ofShard[i - 1].watermarkAfter);
    }

    // Within-watermark: two emitted rows with the same key are more than `delay` apart.
    const emittedByKey = new Map<string, number[]>();
    for (const r of output) emittedByKey.set(r.id, [...(emittedByKey.get(r.id) ?? []), r.ts!]);
    let reEmitted = 0;
    for (const [id, times] of emittedByKey) {
      times.sort((a, b) => a - b);
      for (let i = 1; i < times.length; i++) {
        expect(times[i] - times[i - 1], `key ${id} emitted at ${times[i - 1]} and ${times[i]}`).toBeGreaterThan(DELAY);
        reEmitted++;
      }
    }
    expect(reEmitted).toBeGreaterThan(0);

    // No loss: a row that was not emitted is explained, either as possibly late (at or below the
    // watermark after its batch) or as a duplicate of an emitted copy still in state when its batch
    // began (emitted at T with T + delay > the batch's watermark).
    for (const b of batches) {
      const o = b.outcome!;
      for (const r of b.rows) {
        if (r.ts === undefined || uids.has(r.uid)) continue;
        const possiblyLate = r.ts <= judgedAtMost(o);
        const possiblyDuplicate = (emittedByKey.get(r.id) ?? []).some((t) => t + DELAY > o.watermark);
        expect(possiblyLate || possiblyDuplicate, `row ${r.uid} (${r.id} at ${r.ts}) vanished: neither late nor a duplicate`).toBe(true);
      }
    }

    // (With several shards a batch's watermarkAfter is the clock's when it committed: never ahead of the global one.)
    if (shards === 1) expect(Math.max(...batches.map((b) => b.outcome!.watermarkAfter))).toBe(expectedWatermark);
    else expect(Math.max(...batches.map((b) => b.outcome!.watermarkAfter))).toBeLessThanOrEqual(expectedWatermark);

    // A key with a copy above the final watermark was never late anywhere, so it is in the output.
    for (const b of batches) {
      for (const r of b.rows) {
        if (r.ts !== undefined && r.ts > expectedWatermark) expect(emittedByKey.has(r.id), `key ${r.id} lost`).toBe(true);
      }
    }

    // The state left behind: each key's latest emitted copy, while it has not expired.
    const alive = new Map<string, number>();
    for (const [id, times] of emittedByKey) {
      const last = Math.max(...times);
      if (last + DELAY > expectedWatermark) alive.set(JSON.stringify([id]), last + DELAY);
    }
    const info = await pollUntil(
      () => api.stream(s),
      (i) => i.state.rows === alive.size,
      5_000,
    );
    expect(info.watermark).toBe(expectedWatermark);
    expect(info.batches.committed).toBe(batches.length);
    expect(info.state.rows).toBe(alive.size);
    const state = await api.allState(s, 4);
    const listed = new Map(state.flatMap((p) => p.keys.map((k) => [k.key, k.expiresAt] as const)));
    expect(listed).toEqual(alive);
  });
});

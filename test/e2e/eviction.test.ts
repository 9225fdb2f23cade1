/**
 * Prompt eviction over HTTP (DESIGN §2.5): once a commit moves the watermark,
 * every partition forgets its expired keys soon after, including partitions
 * that received no rows. Also the other two modes' state keys and expiry.
 */
import { describe, expect, test } from "vitest";
import { at, pollUntil, useServer } from "./server";

const { server, api } = useServer();

const enc = (id: string) => JSON.stringify([id]);

describe("prompt eviction", () => {
  test("within-watermark, 4 partitions: a row far ahead evicts expired keys in every partition within seconds", async () => {
    const s = "evict";
    const P = 4;
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "30 minutes", partitions: P });

    const old = Array.from({ length: 40 }, (_, i) => ({ id: `k${i}`, ts: at(10) }));
    const alive = Array.from({ length: 4 }, (_, i) => ({ id: `alive${i}`, ts: at(10, 20) }));
    const first = await api.ingest(s, [...old, ...alive]);
    expect(first).toMatchObject({ emitted: 44, watermark: 0, watermarkAfter: at(9, 50) });

    // The keys are spread over every partition; nothing expires at 09:50.
    let state = await api.allState(s, P);
    for (const p of state) expect(p.keys.filter((k) => k.key.startsWith('["k')).length, `partition ${p.partition}`).toBeGreaterThan(0);
    expect(state.flatMap((p) => p.keys.map((k) => k.key)).sort()).toEqual([...old, ...alive].map((r) => enc(r.id)).sort());
    for (const p of state) {
      for (const k of p.keys) expect(k.expiresAt).toBe(k.eventTime! + 30 * 60_000);
    }
    await new Promise((r) => setTimeout(r, 600)); // past the eviction alarm of the first commit
    expect((await api.stream(s)).state.rows).toBe(44);

    // One row from one key at 11:00: watermark 10:30, which evicts k0..k39 (10:00 + 30 min, at equality).
    const mover = await api.ingest(s, [{ id: "mover", ts: at(11) }]);
    expect(mover).toMatchObject({ emitted: 1, watermark: at(9, 50), watermarkAfter: at(10, 30) });
    const t0 = Date.now();
    const info = await pollUntil(
      () => api.stream(s),
      (i) => i.state.rows === 5,
      5_000,
    );
    const took = Date.now() - t0;
    expect(info.watermark).toBe(at(10, 30));
    expect(info.state.rows, `state.rows ${took} ms after the commit`).toBe(5);

    state = await api.allState(s, P);
    const moverPartition = state.find((p) => p.keys.some((k) => k.key === enc("mover")))!;
    expect(moverPartition).toBeDefined();
    expect(state.flatMap((p) => p.keys.map((k) => k.key)).sort()).toEqual([...alive.map((r) => enc(r.id)), enc("mover")].sort());
    for (const p of state) {
      // Partitions that received no rows in the last batch were evicted too, and their watermark moved.
      for (const k of p.keys) expect(k.expiresAt!, `partition ${p.partition} still holds ${k.key}`).toBeGreaterThan(at(10, 30));
      expect(p.rows).toBe(p.keys.length);
      expect(p.watermark, `partition ${p.partition} watermark`).toBe(at(10, 30));
    }
    expect(state.filter((p) => p !== moverPartition).every((p) => !p.keys.some((k) => k.key === enc("mover")))).toBe(true);

    // The evicted key may be emitted again above the watermark; a live key is still a duplicate; T == wm is late.
    const after = await api.ingest(s, [
      { id: "k0", ts: at(10, 31) },
      { id: "alive0", ts: at(10, 40) },
      { id: "k1", ts: at(10, 30) },
    ]);
    expect(after).toMatchObject({ watermark: at(10, 30), emitted: 1, duplicates: 1, late: 1 });
    expect((await api.output<{ id: string }>(s)).map((r) => r.id).slice(-2)).toEqual(["mover", "k0"]);

    // Progress carries Spark's state figures: before the eviction 44 + mover; after it, the 5 left + k0.
    const progress = await api.progress(s);
    expect(progress).toHaveLength(3);
    expect(progress[1]).toMatchObject({ batchId: mover.batchId, numRowsTotal: 45, numRowsUpdated: 1, numRowsRemoved: 0 });
    expect(progress[2]).toMatchObject({ batchId: after.batchId, numRowsTotal: 6, numRowsUpdated: 1 });
    expect(progress[2].stateBytes).toBeGreaterThan(0);
    expect((await api.stream(s)).state.rows).toBe(6);
  });

  test("event-time-key: the state key carries T, and a key is evicted when the watermark reaches T", async () => {
    const s = "evict-etk";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "10 minutes", mode: "event-time-key", partitions: 2 });
    const o = await api.ingest(s, [
      { id: "a", ts: at(10) },
      { id: "a", ts: at(10, 5) },
      { id: "a", ts: at(10) },
    ]);
    expect(o).toMatchObject({ emitted: 2, duplicates: 1, late: 0 });
    expect((await api.stream(s)).state.rows).toBe(2);

    const b = await api.ingest(s, [{ id: "b", ts: at(11) }]); // watermark 10:50 evicts a@10:00 and a@10:05
    expect(b.watermarkAfter).toBe(at(10, 50));
    const info = await pollUntil(
      () => api.stream(s),
      (i) => i.state.rows === 1,
      5_000,
    );
    expect(info.state.rows).toBe(1);
    const keys = (await api.allState(s, 2)).flatMap((p) => p.keys);
    expect(keys).toEqual([{ key: `${enc("b")}@${at(11)}`, eventTime: at(11), expiresAt: at(11) }]);

    const again = await api.ingest(s, [
      { id: "a", ts: at(10) },
      { id: "a", ts: at(10, 51) },
      { id: "b", ts: at(11) },
    ]);
    expect(again).toMatchObject({ late: 1, emitted: 1, duplicates: 1 });
    const out = await api.output<{ id: string; ts: number }>(s);
    expect(new Set(out.map((r) => `${r.id}@${r.ts}`)).size).toBe(out.length);
    expect(out).toHaveLength(4);
  });

  test("global: keys are never evicted", async () => {
    const s = "evict-global";
    await api.putStream(s, { key: ["id"], mode: "global", partitions: 2 });
    expect(await api.ingest(s, [{ id: "a" }, { id: "a" }, { id: "b", n: 1 }])).toMatchObject({ emitted: 2, duplicates: 1, late: 0, watermarkAfter: 0 });
    expect(await api.ingest(s, [{ id: "b", n: 2 }, { id: "c" }])).toMatchObject({ emitted: 1, duplicates: 1 });
    const keys = (await api.allState(s, 2)).flatMap((p) => p.keys).sort((x, y) => x.key.localeCompare(y.key));
    expect(keys).toEqual(["a", "b", "c"].map((id) => ({ key: enc(id), eventTime: null, expiresAt: null })));
    // The state reader pages with limit and after.
    const paged: string[] = [];
    for (const p of [0, 1]) {
      let after = "";
      for (;;) {
        const res = await api.request("GET", `/v1/streams/${s}/state?partition=${p}&limit=1&after=${encodeURIComponent(after)}`);
        expect(res.status).toBe(200);
        const page = JSON.parse(res.text) as { keys: { key: string }[] };
        expect(page.keys.length).toBeLessThanOrEqual(1);
        if (page.keys.length === 0) break;
        paged.push(page.keys[0].key);
        after = page.keys[0].key;
      }
    }
    expect(paged.sort()).toEqual(keys.map((k) => k.key));
    expect(await api.output(s)).toEqual([{ id: "a" }, { id: "b", n: 1 }, { id: "c" }]);
  });
});

import { env, exports } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SHARD_SEQ_BASE, shardFor, shardOfSeq } from "../../../src/stream/shards";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { at, call, client, createStream, json, output, post, settled } from "../helpers";

// Ingest shards (DESIGN §12): a stream's batches are judged by several
// Coordinators, each by its own batch ids, under one global watermark.

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 4 };
/** A batch id that shard `k` of `shards` judges (the n-th such). */
function idFor(k: number, shards: number, n = 0, prefix = "b"): string {
  for (let i = 0, found = 0; ; i++) if (shardFor(`${prefix}${i}`, shards) === k && found++ === n) return `${prefix}${i}`;
}

describe("ingest shards", () => {
  it("a bad or changed shard count is refused clearly; one shard is today's stream", async () => {
    for (const bad of [0, 257, 1.5, "4"]) {
      const r = await call("PUT", "/v1/streams/sh-bad", { ...base, shards: bad });
      expect(r.status, String(bad)).toBe(400);
      expect(JSON.stringify(await r.json())).toContain("shards");
    }
    expect((await call("GET", "/v1/streams/sh-bad")).status).toBe(404);
    await createStream("sh-one", { ...base, shards: 1 });
    const one = await json(call("GET", "/v1/streams/sh-one"));
    expect(one.config.shards).toBeUndefined(); // the default: nothing stored
    expect(one.watermarkApplied).toBe(one.watermark);
    await createStream("sh-fixed", { ...base, shards: 4 });
    const changed = await call("PUT", "/v1/streams/sh-fixed", { ...base, shards: 2 });
    expect(changed.status).toBe(409);
    expect((await changed.json<any>()).errors).toEqual([{ path: "shards", message: "bound at creation" }]);
    expect((await call("PUT", "/v1/streams/sh-fixed", { ...base, shards: 4 })).status).toBe(200);
  });

  it("each batch is judged once by its shard: commit numbers say the shard, replays and 422s as with one, output read across shards", async () => {
    const s = "sh-four";
    await createStream(s, { ...base, shards: 4 });
    const d = await json(call("GET", `/v1/streams/${s}`));
    expect(d.config.shards).toBe(4);
    const sent: { id: string; k: number; rows: { id: string; ts: number }[] }[] = [];
    for (let k = 0; k < 4; k++) {
      for (let n = 0; n < 2; n++) {
        const id = idFor(k, 4, n);
        const rows = [
          { id: `${id}-x`, ts: at(10, k) },
          { id: "shared", ts: at(10, 0) }, // one key in every batch: kept once over all shards
        ];
        sent.push({ id, k, rows });
      }
    }
    const outcomes = [];
    for (const b of sent) outcomes.push(await post(s, b.rows, { "idempotency-key": b.id }));
    expect(outcomes.reduce((a, o) => a + o.emitted, 0)).toBe(9);
    expect(outcomes.reduce((a, o) => a + o.duplicates, 0)).toBe(7);
    // The delay advisor counts every shard's batches: 16 rows, the 7 copies of "shared", each at its kept copy's event time.
    const advice = await json(call("GET", `/v1/streams/${s}/advice`));
    expect(advice.overall).toMatchObject({ rows: 16, duplicates: 7, gaps: { count: 7 }, disorder: { events: 16 } });
    expect(advice.overall.gaps.max).toBe(0);
    // Progress reports name each batch's commit, whose number says the shard that judged it.
    const progress = (await json(call("GET", `/v1/streams/${s}/progress`))).progress;
    expect(progress).toHaveLength(8);
    for (const p of progress) expect(shardOfSeq(p.commitSeq)).toBe(sent.find((b) => b.id === p.batchId)!.k);
    // A receipt names the kept copy's commit, which the shard that judged it holds.
    const b5 = sent[5];
    const receipt = await json(call("GET", `/v1/streams/${s}/state?row=${encodeURIComponent(JSON.stringify(b5.rows[0]))}`));
    expect(receipt.keys[0].kept).toMatchObject({ batchId: b5.id, seq: progress.find((p: any) => p.batchId === b5.id).commitSeq });
    expect(shardOfSeq(receipt.keys[0].kept.seq)).toBe(b5.k);
    // A retry is a replay whichever shard it reaches first; another body under the same id is a 422.
    const again = await post(s, sent[5].rows, { "idempotency-key": sent[5].id });
    expect(again).toEqual({ ...outcomes[5], replayed: true });
    const reused = await call("POST", `/v1/streams/${s}/events`, [{ id: "other", ts: at(10, 0) }], { "idempotency-key": sent[5].id });
    expect(reused.status).toBe(422);

    // One output: every kept row once, shard after shard, each shard's in commit order.
    const lane = await client.output<{ id: string }>(s);
    expect(lane.rows.map((r) => r.id).sort()).toEqual([...sent.map((b) => `${b.id}-x`), "shared"].sort());
    const cursor = lane.cursor!.split(",").map(Number);
    expect(cursor.map(shardOfSeq)).toEqual([0, 1, 2, 3]);
    expect(cursor.map((n, k) => n - k * SHARD_SEQ_BASE)).toEqual([2, 2, 2, 2]);
    // Read on from the cursor: only what came after.
    const later = idFor(2, 4, 5);
    await post(s, [{ id: "later", ts: at(10, 9) }], { "idempotency-key": later });
    const next = await client.output<{ id: string }>(s, { cursor: lane.cursor });
    expect(next.rows.map((r) => r.id)).toEqual(["later"]);
    expect(next.cursor).toBe([cursor[0], cursor[1], cursor[2] + 1, cursor[3]].join(","));
    // A cursor naming one shard reads the others from their start.
    const fromTwo = await client.output<{ id: string }>(s, { after: cursor[2] });
    // ("shared" was kept by the first batch, shard 0's.)
    const notTwo = sent.filter((b) => b.k !== 2).map((b) => `${b.id}-x`);
    expect(fromTwo.rows.map((r) => r.id).sort()).toEqual([...notTwo, "shared", "later"].sort());
    for (const bad of ["x", "1,2", `${5 * SHARD_SEQ_BASE}`, `${SHARD_SEQ_BASE + 1},${SHARD_SEQ_BASE + 2}`]) {
      const r = await call("GET", `/v1/streams/${s}/output?after=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.headers.get("content-type")).toMatch(/problem\+json/);
    }
    // The stream's figures are over every shard.
    const all = await settled(s);
    expect(all.batches.committed).toBe(9);
    expect(all.state.rows).toBe(10);
    expect(all.watermark).toBe(at(10, 9) - 5 * 60_000);
    // Health reads the stream as one: its watermark, and every shard's batches in the recent reports.
    const health = await json(call("GET", `/v1/streams/${s}/health`));
    expect(health).toMatchObject({ stream: s, watermark: all.watermark });
    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics).toMatch(new RegExp(`edge_dedup_batches_total\\{stream="${s}"\\} 9`));
  });

  it("a shard never judges a batch that is not its own: a caller with a stale count is told, and routed again", async () => {
    const s = "sh-moved";
    await createStream(s, { ...base, shards: 4 });
    const id = idFor(3, 4);
    const req: IngestRequest = { sourceHeader: null, batchId: id, auth: { kind: "admin" }, rows: [{ id: "m", ts: at(10, 0) }], identity: "json:x", bytes: 10 };
    expect(await env.COORDINATOR.getByName(s).ingestMany([req])).toEqual([{ kind: "moved", shards: 4 }]);
    // Through the Worker (which learns the count from the answer): judged by shard 3, once.
    expect(await post(s, [{ id: "m", ts: at(10, 0) }], { "idempotency-key": id })).toMatchObject({ emitted: 1 });
    const progress = (await json(call("GET", `/v1/streams/${s}/progress`))).progress;
    expect(progress.map((p: any) => shardOfSeq(p.commitSeq))).toEqual([3]);
  });

  it("credentials hold on every shard: a token admits batches whichever shard judges them, and revoked, none", async () => {
    const s = "sh-cred";
    await createStream(s, { ...base, shards: 4 });
    const created = await json(call("POST", `/v1/streams/${s}/sources/app/credentials`, { type: "token" }));
    const send = (batchId: string) =>
      exports.default.fetch(`http://edge-dedup.test/v1/streams/${s}/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${created.secret}`, "content-type": "application/json", "x-source": "app", "idempotency-key": batchId },
        body: JSON.stringify([{ id: batchId, ts: at(10, 0) }]),
      });
    for (let k = 0; k < 4; k++) expect((await send(idFor(k, 4, 0, "t"))).status, `shard ${k}`).toBe(200);
    expect((await call("DELETE", `/v1/streams/${s}/sources/app/credentials/${created.id}`)).status).toBe(204);
    // Past the Worker's admission cache, every shard refuses it (each checks its batches' callers itself).
    for (let k = 0; k < 4; k++) {
      const stub = env.COORDINATOR.getByName(k === 0 ? s : `${s}#${k}`);
      const list = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM credentials").one().n);
      expect(list, `shard ${k}`).toBe(0);
    }
  });

  it("a deleted stream takes every shard and its clock; created again with fewer shards, it starts afresh", async () => {
    const s = "sh-drop";
    await createStream(s, { ...base, shards: 3 });
    for (let k = 0; k < 3; k++) await post(s, [{ id: `r${k}`, ts: at(10, k) }], { "idempotency-key": idFor(k, 3) });
    await settled(s);
    expect((await call("DELETE", `/v1/streams/${s}`)).status).toBe(204);
    for (const name of [s, `${s}#1`, `${s}#2`]) {
      const left = await runInDurableObject(
        env.COORDINATOR.getByName(name),
        (_o, state) => state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'meta'").toArray().length,
      );
      expect(left, name).toBe(0);
    }
    expect(await env.CLOCK.getByName(s).read("any")).toBeNull();
    await createStream(s, { ...base, shards: 2 });
    expect(await output(s)).toEqual([]);
    // A batch that shard 2 judged before is judged anew by this incarnation's shard.
    expect(await post(s, [{ id: "r2", ts: at(10, 2) }], { "idempotency-key": idFor(2, 3) })).toMatchObject({ emitted: 1, replayed: false });
    expect((await settled(s)).batches.committed).toBe(1);
    // A shard of the old incarnation that a delete had left behind is refused by the clock, which keeps the new one's.
    const leftover = { stream: s, epoch: "old", incarnation: 1, shard: 2, shards: 3, configVersion: 1, sources: {}, pending: {}, applied: 0 };
    expect(await env.CLOCK.getByName(s).exchange(leftover)).toEqual({ kind: "stale" });
    expect((await settled(s)).watermark).toBe(at(10, 2) - 5 * 60_000);
  });

  it("a shard that restarts keeps judging by a watermark no newer than the clock's, and catches up", async () => {
    const s = "sh-restart";
    await createStream(s, { ...base, shards: 2 });
    await post(s, [{ id: "a", ts: at(10, 0) }], { "idempotency-key": idFor(0, 2) });
    await post(s, [{ id: "b", ts: at(10, 30) }], { "idempotency-key": idFor(1, 2) });
    const before = await settled(s);
    expect(before.watermark).toBe(at(10, 25)); // one source: its largest event time over both shards, less the delay
    await evictDurableObject(env.COORDINATOR.getByName(s));
    await evictDurableObject(env.CLOCK.getByName(s));
    const after = await settled(s);
    expect(after.watermark).toBe(before.watermark);
    // A late row on shard 0 is judged by the global watermark, as with one shard.
    expect(await post(s, [{ id: "old", ts: at(10, 10) }], { "idempotency-key": idFor(0, 2, 1) })).toMatchObject({ late: 1, emitted: 0 });
  });
});

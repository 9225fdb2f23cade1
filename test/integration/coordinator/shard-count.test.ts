/**
 * More ingest shards on a live stream (PATCH {"shards": S}, issue #32;
 * src/coordinator/shard-count.ts, src/stream/shard-change.ts): batches
 * judged before the change replay wherever their retry lands, a moved id
 * reused with another body is still a 422, a batch in flight at its old shard
 * across the change commits once, new batches spread over every shard with
 * the stream's credentials, repeats are dropped across old and new shards,
 * and every id is in the output once; growing again within the window finds
 * every id where it was judged; fewer shards keep their output and take no
 * batches until a later change takes them up again.
 */
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import type { IngestRequest } from "../../../src/coordinator/protocol";
import { describe, expect, it } from "vitest";
import { armFault, batchFaultKey, holdRun, SHARD_CHANGE_FAULT_POINTS, shardChangeFaultKey } from "../../../src/instrument/faults";
import { seqBase, shardFor } from "../../../src/stream/shards";
import { at, call, createStream, json, output, post, settled } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 3, shards: 2 };

/** A batch id whose shard is `before` under 2 shards and `after` under 4 (the hash modulo each: 0 stays or goes to 2, 1 to 3). */
function idMoving(before: number, after: number, tag: string): string {
  for (let i = 0; ; i++) if (shardFor(`${tag}-${i}`, 2) === before && shardFor(`${tag}-${i}`, 4) === after) return `${tag}-${i}`;
}

describe("PATCH shards on a live stream", () => {
  it("2 → 4: retries replay wherever they land, a reused id is a 422, an in-flight batch commits once, new batches reach every shard", async () => {
    const s = "grow";
    await createStream(s, base);
    const created = await json(call("POST", `/v1/streams/${s}/sources/app/credentials`, { type: "token" }));
    const sent: Record<string, { rows: { id: string; ts: number }[]; emitted: number }> = {};
    const send = async (batchId: string, ids: string[], minute = 0) => {
      const rows = ids.map((id) => ({ id, ts: at(10, minute) }));
      const r = await post(s, rows, { "idempotency-key": batchId });
      sent[batchId] = { rows, emitted: r.emitted };
      return r;
    };
    // Batches whose ids stay, and ones whose ids move to each new shard.
    const ids = [idMoving(0, 0, "b"), idMoving(1, 1, "b"), idMoving(0, 2, "b"), idMoving(1, 3, "b"), idMoving(0, 2, "c"), idMoving(1, 3, "c")];
    for (const [i, id] of ids.entries()) expect((await send(id, [`k${i}`, `k${i}`])).emitted).toBe(1);
    await settled(s);
    // One batch is in flight at its old shard (0) while the count changes; its id moves to shard 2.
    const held = idMoving(0, 2, "held");
    const hold = holdRun(batchFaultKey(s, held));
    const inFlight = post(s, [{ id: "h", ts: at(10, 1) }], { "idempotency-key": held });
    await hold.reached;
    const r = await call("PATCH", `/v1/streams/${s}`, { shards: 4 });
    expect(r.status, await r.clone().text()).toBe(202);
    expect(await r.json()).toEqual({ shards: { from: 2, to: 4 }, state: "done" });
    // Its retry now goes to shard 2, which asks shard 0: in flight there, so it waits and answers as the batch did.
    const retried = post(s, [{ id: "h", ts: at(10, 1) }], { "idempotency-key": held });
    hold.release();
    expect(await inFlight).toMatchObject({ emitted: 1 });
    expect(await retried).toMatchObject({ emitted: 1, replayed: true });
    sent[held] = { rows: [{ id: "h", ts: at(10, 1) }], emitted: 1 };
    // Every earlier batch's retry replays, wherever it is routed now: one after another, and all at once (their old shards asked together).
    for (const [id, b] of Object.entries(sent))
      expect(await post(s, b.rows, { "idempotency-key": id }), id).toMatchObject({ replayed: true, emitted: b.emitted });
    const together = await Promise.all(Object.entries(sent).map(([id, b]) => post(s, b.rows, { "idempotency-key": id })));
    together.forEach((r, i) => expect(r, Object.keys(sent)[i]).toMatchObject({ replayed: true, emitted: Object.values(sent)[i].emitted }));
    // A moved id reused with another body is a 422, as before the change.
    const reused = await call("POST", `/v1/streams/${s}/events`, [{ id: "other", ts: at(10, 2) }], { "idempotency-key": ids[2] });
    expect(reused.status).toBe(422);
    // New batches reach all four shards; repeats of keys kept before the change are duplicates on any of them.
    const judged = new Set<number>();
    for (let i = 0; i < 16; i++) {
      const batchId = `new-${i}`;
      judged.add(shardFor(batchId, 4));
      expect(await send(batchId, [`n${i}`, `k${i % ids.length}`], 3), batchId).toMatchObject({ emitted: 1, duplicates: 1 });
    }
    expect(judged).toEqual(new Set([0, 1, 2, 3]));
    // The stream's credentials reached the new shards.
    const viaToken = (batchId: string) =>
      exports.default.fetch(`http://edge-dedup.test/v1/streams/${s}/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${created.secret}`, "content-type": "application/json", "x-source": "app", "idempotency-key": batchId },
        body: JSON.stringify([{ id: batchId, ts: at(10, 4) }]),
      });
    for (const k of [2, 3]) {
      let batchId = "";
      for (let i = 0; shardFor(batchId, 4) !== k || batchId === ""; i++) batchId = `tok-${k}-${i}`;
      expect((await viaToken(batchId)).status, `shard ${k}`).toBe(200);
    }
    const d = await settled(s);
    expect(d.config.shards).toBe(4);
    expect(d.shardChange).toMatchObject({ from: 2, to: 4, phase: "done" });
    expect(d.shardChange.until).toBeGreaterThan(Date.now() + 23 * 3_600_000); // the default window, 24 hours
    expect((await json(call("GET", `/v1/streams/${s}/publication`))).shards).toHaveLength(4);
    const out = (await output(s)).map((row) => row.id);
    expect(out.length).toBe(new Set(out).size);
    expect(out.filter((id) => id.startsWith("k")).sort()).toEqual(ids.map((_, i) => `k${i}`).sort());
    expect(out).toContain("h");
    for (let k = 2; k < 4; k++) expect(await env.COORDINATOR.getByName(`${s}#${k}`).locate(), `shard ${k}`).toMatchObject({ shard: k });
  });

  it("1 → 2 → 3 → 5 within one window: every batch judged in any era replays from wherever it lands, a reused id is a 422, its key's receipt names its commit; a fifth change is a 409", async () => {
    const s = "grow-again";
    await createStream(s, { ...base, shards: 1 });
    const sent: { batchId: string; rows: { id: string; ts: number }[]; emitted: number }[] = [];
    const era = async (tag: string, shards: number) => {
      for (let i = 0; i < 6; i++) {
        const batchId = `${tag}-${i}`;
        const rows = [{ id: `${tag}-k${i}`, ts: at(10, 0) }];
        const r = await post(s, rows, { "idempotency-key": batchId });
        expect(r, batchId).toMatchObject({ emitted: 1 });
        sent.push({ batchId, rows, emitted: r.emitted });
      }
      if (shards > 1) {
        const r = await call("PATCH", `/v1/streams/${s}`, { shards });
        expect(r.status, await r.clone().text()).toBe(202);
      }
    };
    await era("one", 2);
    await era("two", 3);
    await era("three", 5);
    await era("five", 1);
    // Ids that moved across two and three changes: found where they were judged.
    const moves = sent.filter((b) => shardFor(b.batchId, 5) !== shardFor(b.batchId, 1) && shardFor(b.batchId, 5) !== shardFor(b.batchId, 2));
    expect(moves.length).toBeGreaterThan(0);
    for (const b of sent) expect(await post(s, b.rows, { "idempotency-key": b.batchId }), b.batchId).toMatchObject({ replayed: true, emitted: b.emitted });
    for (const b of sent) {
      const reused = await call("POST", `/v1/streams/${s}/events`, [{ id: "other", ts: at(10, 1) }], { "idempotency-key": b.batchId });
      expect(reused.status, b.batchId).toBe(422);
    }
    const d = await settled(s);
    expect(d.config.shards).toBe(5);
    expect(d.shardChange).toMatchObject({ from: 3, to: 5, phase: "done", earlier: [{ from: 2 }, { from: 1 }] });
    // A key kept by a batch of the first era: its receipt's commit number comes from shard 0, where it was judged.
    for (const b of sent.filter((x) => x.batchId.startsWith("one-"))) {
      const st = await json(call("GET", `/v1/streams/${s}/state?row=${encodeURIComponent(JSON.stringify(b.rows[0]))}`));
      expect(st.keys[0].kept, b.batchId).toMatchObject({ batchId: b.batchId, seq: expect.any(Number) });
    }
    const out = (await output(s)).map((row) => row.id);
    expect(out.sort()).toEqual(sent.map((b) => b.rows[0].id).sort());
    // Three changes are remembered; a fourth is taken, a fifth refused until the oldest window ends.
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 6 })).status).toBe(202);
    const fifth = await call("PATCH", `/v1/streams/${s}`, { shards: 7 });
    expect(fifth.status).toBe(409);
    expect(((await fifth.json()) as { detail: string }).detail).toMatch(/at most 4/);
  });

  it("1 → 3: the watermark carries over (never back), late rows stay late, every id once", async () => {
    const s = "grow-one";
    await createStream(s, { ...base, shards: 1 });
    expect((await post(s, [{ id: "a", ts: at(12, 0) }], { "idempotency-key": "first" })).emitted).toBe(1);
    const before = await json(call("GET", `/v1/streams/${s}`));
    expect(before.watermark).toBe(at(11, 0));
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 3 })).status).toBe(202);
    const after = await settled(s);
    expect(after.watermark).toBe(before.watermark);
    expect(after.config.shards).toBe(3);
    // The config PUT again as it now is changes nothing (the PATCH wrote its fields in another order).
    expect(await json(call("PUT", `/v1/streams/${s}`, { ...base, shards: 3 }))).toMatchObject({ status: "unchanged" });
    for (let i = 0; i < 9; i++) {
      const r = await post(
        s,
        [
          { id: "a", ts: at(12, 0) },
          { id: `late-${i}`, ts: at(10, 0) },
          { id: `new-${i}`, ts: at(12, 1) },
        ],
        { "idempotency-key": `after-${i}` },
      );
      expect(r, `after-${i}`).toMatchObject({ emitted: 1, duplicates: 1, late: 1 });
    }
    expect(await post(s, [{ id: "a", ts: at(12, 0) }], { "idempotency-key": "first" })).toMatchObject({ replayed: true, emitted: 1 });
    const out = (await output(s)).map((row) => row.id);
    expect(out.length).toBe(new Set(out).size);
    expect(out).toHaveLength(10);
  });

  it("a PATCH cut short after the prepare: moved ids are refused with a 503 and Retry-After, GET says so, the PATCH sent again finishes", async () => {
    const s = "grow-cut";
    await createStream(s, base);
    const at0 = (await env.COORDINATOR.getByName(s).locate())!;
    // What the PATCH does first, then nothing (a crash): both old shards prepared for 4.
    const preparing = { from: 2, to: 4, phase: "preparing" as const, until: 0 };
    for (const k of [0, 1])
      await env.COORDINATOR.getByName(k === 0 ? s : `${s}#${k}`).configureShard(
        s,
        at0.config,
        { index: k, epoch: at0.epoch, incarnation: at0.incarnation },
        preparing,
      );
    const moved = idMoving(0, 2, "m");
    const refused = await call("POST", `/v1/streams/${s}/events`, [{ id: "x", ts: at(10, 0) }], { "idempotency-key": moved });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(((await refused.json()) as { type: string }).type).toMatch(/shards-changing$/);
    expect((await post(s, [{ id: "y", ts: at(10, 0) }], { "idempotency-key": idMoving(1, 1, "m") })).emitted).toBe(1); // one that stays goes on
    expect((await json(call("GET", `/v1/streams/${s}`))).shardChange).toMatchObject({ from: 2, to: 4, phase: "preparing" });
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 4 })).status).toBe(202);
    expect(await post(s, [{ id: "x", ts: at(10, 0) }], { "idempotency-key": moved })).toMatchObject({ emitted: 1 });
    expect((await settled(s)).shardChange).toMatchObject({ phase: "done" });
  });

  it("4 → 2 → 3 → 5: fewer shards keep their output and take no batches, the ids they judged still replay and are 422s when reused; they are taken up again, and a new one made", async () => {
    const s = "shrink";
    await createStream(s, { ...base, shards: 4 });
    const sent: { batchId: string; rows: { id: string; ts: number }[]; emitted: number }[] = [];
    // Each era a minute later: the watermark moves, and every shard that takes batches must come to judge by it (settled()).
    const send = async (tag: string, n: number, minute: number) => {
      for (let i = 0; i < n; i++) {
        const batchId = `${tag}-${i}`;
        const rows = [
          { id: `${tag}-k${i}`, ts: at(10, minute) },
          { id: `old-${i % 4}`, ts: at(10, minute) }, // kept by the first era's first four batches: a duplicate from then on
        ];
        const r = await post(s, rows, { "idempotency-key": batchId });
        expect(r.emitted, batchId).toBe(tag === "first" && i < 4 ? 2 : 1);
        sent.push({ batchId, rows, emitted: r.emitted });
      }
    };
    const lastSeqs = async () =>
      Promise.all([0, 1, 2, 3, 4].map(async (k) => (await env.COORDINATOR.getByName(k === 0 ? s : `${s}#${k}`).locate())?.lastSeq ?? null));
    const retriesReplay = async () => {
      for (const b of sent) expect(await post(s, b.rows, { "idempotency-key": b.batchId }), b.batchId).toMatchObject({ replayed: true, emitted: b.emitted });
      const reused = sent.filter((b) => b.batchId.startsWith("first-")).map((b) => b.batchId);
      for (const id of reused)
        expect((await call("POST", `/v1/streams/${s}/events`, [{ id: "other", ts: at(10, 1) }], { "idempotency-key": id })).status, id).toBe(422);
    };
    await send("first", 16, 0);
    expect(new Set(sent.map((b) => shardFor(b.batchId, 4)))).toEqual(new Set([0, 1, 2, 3]));
    const patch = async (shards: number) => {
      const r = await call("PATCH", `/v1/streams/${s}`, { shards });
      expect(r.status, await r.clone().text()).toBe(202);
      return r.json();
    };
    expect(await patch(2)).toEqual({ shards: { from: 4, to: 2 }, state: "done" });
    const two = await settled(s);
    expect(two.config).toMatchObject({ shards: 4, intakeShards: 2 });
    expect(two.shardChange).toMatchObject({ from: 4, to: 2, phase: "done" });
    const before = await lastSeqs();
    await retriesReplay();
    await send("second", 12, 1);
    await settled(s);
    // Shards 2 and 3 took nothing new; 0 and 1 took all of it.
    const after = await lastSeqs();
    expect([after[2], after[3]]).toEqual([before[2], before[3]]);
    expect(after[0]! - before[0]! + (after[1]! - before[1]!)).toBe(12);
    // A PUT of the config keeps the count PATCH set; one with the count asked of PATCH changes a bound field.
    expect((await call("PUT", `/v1/streams/${s}`, { ...base, shards: 4 })).status).toBe(200);
    expect((await json(call("GET", `/v1/streams/${s}`))).config.intakeShards).toBe(2);
    expect((await call("PUT", `/v1/streams/${s}`, { ...base, shards: 2 })).status).toBe(409);
    // 2 → 3 takes shard 2 up again; 3 → 5 takes up shard 3 and makes shard 4.
    expect(await patch(3)).toEqual({ shards: { from: 2, to: 3 }, state: "done" });
    await send("third", 12, 2);
    await settled(s);
    const third = await lastSeqs();
    expect(third[2]).toBeGreaterThan(after[2]!);
    expect(third[3]).toBe(after[3]);
    expect(await patch(5)).toEqual({ shards: { from: 3, to: 5 }, state: "done" });
    const five = await settled(s);
    expect(five.config.shards).toBe(5);
    expect(five.config.intakeShards).toBeUndefined();
    expect(five.shardChange).toMatchObject({ from: 3, to: 5, earlier: [{ from: 2 }, { from: 4 }] });
    await send("fifth", 12, 3);
    expect((await settled(s)).watermark).toBe(at(9, 3));
    expect((await lastSeqs())[4]).toBeGreaterThan(seqBase(4));
    await retriesReplay();
    // Every id once, from every shard that ever judged one.
    const out = (await output(s)).map((row) => row.id);
    expect(out.sort()).toEqual([...new Set(sent.flatMap((b) => b.rows.map((r) => r.id)))].sort());
    expect((await json(call("GET", `/v1/streams/${s}/publication`))).shards).toHaveLength(5);
  });

  describe.each([
    [2, 4],
    [4, 2],
  ])("%i → %i shards, the PATCH killed between its steps", (from, to) => {
    it.each(SHARD_CHANGE_FAULT_POINTS)(
      "after %s: moved ids wait (503), ids that stay go on, the PATCH sent again finishes and every guarantee holds",
      async (point) => {
        const s = `cut-${from}-${to}-${point}`;
        await createStream(s, { ...base, shards: from });
        const sent: { batchId: string; rows: { id: string; ts: number }[]; emitted: number }[] = [];
        const send = async (batchId: string) => {
          const rows = [{ id: `k-${batchId}`, ts: at(10, 0) }];
          const r = await post(s, rows, { "idempotency-key": batchId });
          sent.push({ batchId, rows, emitted: r.emitted });
        };
        for (let i = 0; i < 12; i++) await send(`before-${i}`);
        armFault(shardChangeFaultKey(s), point);
        const cut = await call("PATCH", `/v1/streams/${s}`, { shards: to });
        expect(cut.status).toBe(503);
        expect((await json(call("GET", `/v1/streams/${s}`))).shardChange).toMatchObject({ from, to, phase: "preparing" });
        // A new id that moves waits; one that stays with its shard under both counts goes on.
        let moving = "";
        let staying = "";
        for (let i = 0; !moving || !staying; i++) {
          const id = `during-${i}`;
          if (shardFor(id, from) === shardFor(id, to)) staying ||= id;
          else moving ||= id;
        }
        const waited = await call("POST", `/v1/streams/${s}/events`, [{ id: "m", ts: at(10, 0) }], { "idempotency-key": moving });
        expect(waited.status).toBe(503);
        expect(waited.headers.get("retry-after")).toBe("1");
        await send(staying);
        // Batches judged before the change replay while it is cut short, or wait (503) where the shards disagree on the count; never judged again.
        for (const b of sent) {
          const r = await call("POST", `/v1/streams/${s}/events`, b.rows, { "idempotency-key": b.batchId });
          if (r.status === 503) expect(r.headers.get("retry-after"), b.batchId).toBe("1");
          else expect({ status: r.status, ...((await r.json()) as object) }, b.batchId).toMatchObject({ status: 200, replayed: true, emitted: b.emitted });
        }
        const again = await call("PATCH", `/v1/streams/${s}`, { shards: to });
        expect(again.status, await again.clone().text()).toBe(202);
        const d = await settled(s);
        expect(d.shardChange).toMatchObject({ from, to, phase: "done" });
        expect(d.config.intakeShards ?? d.config.shards).toBe(to);
        await send(moving);
        for (let i = 0; i < 12; i++) await send(`after-${i}`);
        for (const b of sent) expect(await post(s, b.rows, { "idempotency-key": b.batchId }), b.batchId).toMatchObject({ replayed: true, emitted: b.emitted });
        expect((await call("POST", `/v1/streams/${s}/events`, [{ id: "other", ts: at(10, 1) }], { "idempotency-key": "before-3" })).status).toBe(422);
        const out = (await output(s)).map((row) => row.id);
        expect(out.sort()).toEqual(sent.map((b) => b.rows[0].id).sort());
        expect(sent.every((b) => b.emitted === 1)).toBe(true);
      },
    );
  });

  it("credentials added or deleted while a change is cut short: on every shard, new ones included, an added token is taken and a deleted one refused", async () => {
    const s = "grow-credentials";
    await createStream(s, base);
    const kept = await json(call("POST", `/v1/streams/${s}/sources/app/credentials`, { type: "token" }));
    const dropped = await json(call("POST", `/v1/streams/${s}/sources/app/credentials`, { type: "token" }));
    armFault(shardChangeFaultKey(s), "shards-made");
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 4 })).status).toBe(503);
    // Cut short after shards 2 and 3 were made with both tokens.
    const held = async (k: number) => (await env.COORDINATOR.getByName(k === 0 ? s : `${s}#${k}`).credentials("app")).map((c) => c.id).sort();
    expect(await held(2)).toEqual([kept.id, dropped.id].sort());
    // While it is cut short (shards 2 and 3 made, shard 0 still on 2).
    const added = await json(call("POST", `/v1/streams/${s}/sources/app/credentials`, { type: "token" }));
    expect((await call("DELETE", `/v1/streams/${s}/sources/app/credentials/${dropped.id}`)).status).toBe(204);
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 4 })).status).toBe(202);
    const viaToken = (secret: string, batchId: string) =>
      exports.default.fetch(`http://edge-dedup.test/v1/streams/${s}/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "x-source": "app", "idempotency-key": batchId },
        body: JSON.stringify([{ id: batchId, ts: at(10, 4) }]),
      });
    // Every shard holds exactly shard 0's credentials: the one deleted while cut short is gone from the shards made before.
    for (const k of [1, 2, 3]) expect(await held(k), `shard ${k}`).toEqual(await held(0));
    expect(await held(0)).toEqual([kept.id, added.id].sort());
    for (const k of [0, 1, 2, 3]) {
      let batchId = "";
      for (let i = 0; shardFor(batchId, 4) !== k || batchId === ""; i++) batchId = `cred-${k}-${i}`;
      expect((await viaToken(kept.secret, batchId)).status, `kept, shard ${k}`).toBe(200);
      expect((await viaToken(added.secret, `${batchId}`)).status, `added, shard ${k}`).toBe(200);
      expect((await viaToken(dropped.secret, batchId)).status, `deleted, shard ${k}`).toBe(403);
    }
  });

  it("a moved id from a caller its new shard refuses is answered there: its old shard is not sent the body", async () => {
    const s = "grow-refused";
    await createStream(s, base);
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 4 })).status).toBe(202);
    const old = env.COORDINATOR.getByName(s);
    let recalls = 0;
    // Counted at its intake (an RPC method is the class's: an own property is not called).
    await runInDurableObject(old, (c) => {
      const intake = (c as unknown as { intake: { recall: (...args: unknown[]) => unknown } }).intake;
      const recall = intake.recall.bind(intake);
      intake.recall = (...args) => (recalls++, recall(...args));
    });
    const request = (batchId: string, auth: IngestRequest["auth"]): IngestRequest => ({
      sourceHeader: "app",
      batchId,
      auth,
      rows: [{ id: "r", ts: at(10, 0) }],
      identity: `identity-of-${batchId}`,
      bytes: 30,
    });
    // Shard 2 judges ids that shard 0 had: an admitted caller's is asked of shard 0 first…
    const moved = env.COORDINATOR.getByName(`${s}#2`);
    expect((await moved.ingestMany([request(idMoving(0, 2, "ok"), { kind: "admin" })]))[0]).toMatchObject({ kind: "done" });
    expect(recalls).toBe(1);
    // …a token this stream never issued (one a Worker's admission cache still held, say) is refused without it.
    const [refused] = await moved.ingestMany([request(idMoving(0, 2, "no"), { kind: "token", hash: "no-such-token" })]);
    expect(refused).toEqual({ kind: "unauthorized" });
    expect(recalls).toBe(1);
  });

  it("refuses the same count and a bad one", async () => {
    const s = "grow-refusals";
    await createStream(s, { ...base, shards: 3 });
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 3 })).status).toBe(400);
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 0 })).status).toBe(400);
    expect((await call("PATCH", `/v1/streams/${s}`, { shards: 4, partitions: 4 })).status).toBe(400);
  });
});

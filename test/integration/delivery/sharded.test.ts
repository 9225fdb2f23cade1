import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { destinationSchema } from "../../../src/delivery/schemas";
import { SHARD_SEQ_BASE, shardFor, shardOfSeq } from "../../../src/stream/shards";
import { call, createStream, D, json, output, post, until } from "../helpers";

/**
 * Destinations of a stream of several ingest shards (DESIGN §10, §12): one
 * destination reads every shard's commits, each through its own cursor, and
 * delivers each emitted row once per id; a new destination starts after
 * every shard's last commit; replay takes one shard's commit or a cursor
 * over all of them. The consumer is the second Worker of the queue tests
 * (test/support/delivery-helper-worker.js), which counts each id's arrivals.
 */
const helper = (env as unknown as { DELIVERY_HELPER: Fetcher }).DELIVERY_HELPER;
const T = Date.UTC(2026, 0, 1);
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 2, shards: 4 };

/** A batch id shard `k` of 4 judges (the n-th such). */
function idFor(k: number, n: number): string {
  for (let i = 0, found = 0; ; i++) if (shardFor(`q${i}`, 4) === k && found++ === n) return `q${i}`;
}

interface Received {
  body: { id: string; seq: number; index: number; row: { id: number; ts: number } };
  arrivals: number;
}
const received = async (stream: string): Promise<Received[]> => (await helper.fetch(`http://helper/received?prefix=${stream}.`)).json();

describe("a destination of a stream of 4 shards", () => {
  it("delivers every shard's rows once per id, reports a delivered cursor per shard, and replays one shard or all", async () => {
    const s = "d-shards";
    await createStream(s, base);
    // Before the destination: shard 1 commits; the destination starts after it (and after every shard's last commit).
    await post(s, [{ id: 1000, ts: T }], { "idempotency-key": idFor(1, 9) });
    const created = await call("PUT", D(s, "q"), { type: "queue", binding: "DELIVERIES" });
    expect(created.status).toBe(201);
    const first = destinationSchema.parse((await created.json<any>()).destination);
    expect(first.deliveredCursor).toBe(`0,${SHARD_SEQ_BASE + 1},${2 * SHARD_SEQ_BASE},${3 * SHARD_SEQ_BASE}`);

    let emitted = 0;
    for (let n = 0; n < 3; n++) {
      for (let k = 0; k < 4; k++) {
        // Overlapping ids across shards: each batch repeats an id of the batch before it.
        const b = n * 4 + k;
        const rows = [0, 1, 2].map((i) => ({ id: b * 2 + i, ts: T + b * 2 + i }));
        const o = await post(s, rows, { "idempotency-key": idFor(k, n) });
        emitted += o.emitted;
      }
    }
    expect(emitted).toBe(12 * 2 + 1);
    const got = await until("every emitted row", async () => {
      const r = await received(s);
      return r.length >= emitted ? r : null;
    });
    expect(got).toHaveLength(emitted);
    expect(got.every((m) => m.arrivals === 1)).toBe(true);
    // The rows are the output's (read across shards), each under its shard's commit number; id 1000 is not among them.
    const out = await output(s);
    expect(got.map((m) => m.body.row.id).sort((a, b) => a - b)).toEqual(
      out
        .map((r) => r.id)
        .filter((id) => id !== 1000)
        .sort((a, b) => a - b),
    );
    for (const m of got) expect(m.body.id).toBe(`${s}.${m.body.seq}.${m.body.index}`);
    expect(new Set(got.map((m) => shardOfSeq(m.body.seq)))).toEqual(new Set([0, 1, 2, 3]));

    const last = [0, 1, 2, 3].map((k) => Math.max(...got.filter((m) => shardOfSeq(m.body.seq) === k).map((m) => m.body.seq)));
    const status = await until("every shard delivered", async () => {
      const d = destinationSchema.parse(await json(call("GET", D(s, "q"))));
      return d.deliveredCursor === last.join(",") && d.pending === 0 ? d : null;
    });
    expect(status).toMatchObject({ deliveredSeq: last[0], delivered: emitted, failing: false, dead: 0, lagMs: 0 });
    expect(status.laneStatus.every((l) => l.deliveredCursor === last.join(","))).toBe(true);

    // Replay of one shard's commit: its rows from there on again, no other shard's.
    const shard2 = got.filter((m) => shardOfSeq(m.body.seq) === 2);
    const from = Math.min(...shard2.map((m) => m.body.seq)) + 1;
    const again = shard2.filter((m) => m.body.seq >= from);
    const one = await call("POST", `${D(s, "q")}/replay`, { fromSeq: from });
    expect(one.status).toBe(202);
    expect(await one.json()).toEqual({ fromSeq: from, fromDead: 0 });
    const twice = await until("shard 2's rows again", async () => {
      const r = await received(s);
      return r.filter((m) => m.arrivals === 2).length >= again.length ? r : null;
    });
    expect(
      twice
        .filter((m) => m.arrivals === 2)
        .map((m) => m.body.id)
        .sort(),
    ).toEqual(again.map((m) => m.body.id).sort());
    expect(twice.filter((m) => m.arrivals > 2)).toEqual([]);

    // Replay after a cursor: every shard from after it (here shard 0 from its start, the others after their first commit).
    const firsts = [1, 2, 3].map((k) => Math.min(...got.filter((m) => shardOfSeq(m.body.seq) === k).map((m) => m.body.seq)));
    const all = await call("POST", `${D(s, "q")}/replay`, { after: firsts.join(",") });
    expect(all.status).toBe(202);
    expect(await all.json()).toEqual({ fromSeq: 1, fromSeqs: [1, ...firsts.map((f) => f + 1)], fromDead: 0 });
    const resent = got.filter((m) => shardOfSeq(m.body.seq) === 0 || m.body.seq > firsts[shardOfSeq(m.body.seq) - 1]);
    const thrice = await until("the replayed rows", async () => {
      const r = await received(s);
      const arrivals = new Map(r.map((m) => [m.body.id, m.arrivals]));
      return resent.every((m) => arrivals.get(m.body.id)! >= (again.some((a) => a.body.id === m.body.id) ? 3 : 2)) ? r : null;
    });
    const byId = new Map(thrice.map((m) => [m.body.id, m.arrivals]));
    for (const m of got) {
      const want = 1 + (again.some((a) => a.body.id === m.body.id) ? 1 : 0) + (resent.includes(m) ? 1 : 0);
      expect(byId.get(m.body.id), m.body.id).toBe(want);
    }
    // A cursor naming a shard the stream does not have, or not a cursor: a 400.
    for (const after of [`${4 * SHARD_SEQ_BASE}`, "x", "1,2"]) {
      const bad = await call("POST", `${D(s, "q")}/replay`, { after });
      expect(bad.status, after).toBe(400);
    }
  });

  it("a handler nobody answers: every shard's rows go to one dead lane, and replay of the dead lane takes each shard back from its oldest", async () => {
    const s = "d-shards-dead";
    await createStream(s, base);
    // Port 1 refuses connections: every attempt fails.
    const put = await call("PUT", D(s, "h"), { type: "http", url: "http://127.0.0.1:1/hook", retryFor: "2 seconds", timeout: "1 second" });
    expect(put.status).toBe(201);
    for (const k of [0, 2, 3]) await post(s, [{ id: k, ts: T }], { "idempotency-key": idFor(k, 0) });
    const dead = await until("every shard's row dead", async () => {
      const page = await json(call("GET", `${D(s, "h")}/dead`));
      return page.rows.length === 3 ? page : null;
    });
    const seqs = dead.rows.map((r: any) => r.seq);
    expect(seqs.map(shardOfSeq)).toEqual([0, 2, 3]);
    const replay = await call("POST", `${D(s, "h")}/replay`, { from: "dead" });
    expect(replay.status).toBe(202);
    expect(await replay.json()).toEqual({ fromSeq: seqs[0], fromSeqs: seqs, fromDead: 3 });
    const back = await until("the dead lane again", async () => {
      const page = await json(call("GET", `${D(s, "h")}/dead`));
      return page.rows.length === 3 ? page : null;
    });
    expect(back.rows.map((r: any) => r.id)).toEqual(dead.rows.map((r: any) => r.id));
    // Any other `from` is a clear 400.
    expect((await call("POST", `${D(s, "h")}/replay`, { from: "nothing" })).status).toBe(400);
  });
});

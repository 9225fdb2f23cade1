/**
 * An online rescale against a real local server (DESIGN §12): the stream
 * holds 20,000 keys (a move of dozens of steps), then three clients send
 * batches with repeated ids while it goes from 4 partitions to 7; the
 * server's whole process group is killed (SIGKILL) right after the switch,
 * while the move's first steps and other batches are in flight, and again
 * in the middle of the move (some keys moved, not all). Clients retry what
 * failed under the same batch ids. After
 * the move: every id is in the output exactly once, the batches' emitted
 * counts add up to the ids, the state holds each id once, every key is
 * found by `state?row=`, and the stream is the new count's. With one ingest
 * shard, and with three (whose other shards are fenced by the old
 * partitions and take the new map from shard 0).
 */
import { describe, expect, test } from "vitest";
import { at, pollUntil, rng, sendUntilAnswered, useServer, type Outcome } from "./server";

const { server, api } = useServer();

describe.each([1, 3])("a rescale under load, killed in the middle (%i shard(s))", (shards) => {
  test("4 → 7 partitions with three clients and a SIGKILL: every id once, every key found", async () => {
    const s = `rescale-e2e-${shards}`;
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 4, ...(shards > 1 ? { shards } : {}) });
    const sent = new Set<string>();
    const answers = new Map<string, Outcome>();
    let patched = false;
    let killedMidMove = false;
    let killing: Promise<void> | null = null;
    const send = async (batchId: string, rows: { id: string; ts: number; v: number }[]) =>
      void answers.set(batchId, await sendUntilAnswered(api, s, batchId, rows, () => killing));
    // The keys the move is mostly made of: ~625 per old partition and expiry bucket, pages of 250.
    for (let b = 0; b < 40; b++) {
      const rows = Array.from({ length: 500 }, (_, i) => ({ id: `pre-${b * 500 + i}`, ts: at(10, (b * 500 + i) % 50), v: 0 }));
      for (const r of rows) sent.add(r.id);
      await send(`pre-${b}`, rows);
    }
    const client = async (c: number) => {
      const random = rng(1_000 + c);
      for (let b = 0; b < 24; b++) {
        const rows = Array.from({ length: 40 }, (_, i) => {
          const id = `evt-${Math.floor(random() * 1_500)}`;
          sent.add(id);
          return { id, ts: at(10, Number(id.slice(4)) % 50), v: b * 100 + i };
        });
        await send(`c${c}-b${b}`, rows);
        if (c === 0 && b === 8) {
          const r = await api.request("PATCH", `/v1/streams/${s}`, {
            body: JSON.stringify({ partitions: 7 }),
            headers: { "content-type": "application/json" },
          });
          expect(r.status).toBe(202);
          patched = true;
          // Killed at once: the move's first steps race the kill, and the other clients' batches are in flight.
          killing = server.restart("SIGKILL").finally(() => (killing = null));
          await killing;
          // And again once the move is part way: its cursors, pages and forgotten buckets are resumed from what was committed.
          const part = await pollUntil(
            () => api.stream(s),
            (d) => d.rescale === undefined || d.rescale.keysMoved > 0,
            60_000,
            20,
          );
          if (part.rescale && part.rescale.keysMoved < sent.size) {
            killedMidMove = true;
            killing = server.restart("SIGKILL").finally(() => (killing = null));
            await killing;
          }
        }
      }
    };
    await Promise.all([0, 1, 2].map(client));
    expect(patched).toBe(true);
    expect(killedMidMove).toBe(true);
    // While the move goes on (if it still does), state.rows counts each id once: keys read through and pages handed out are in two partitions.
    let seenMoving = 0;
    const done = await pollUntil(
      () => api.stream(s),
      (d) => {
        if (d.rescale === undefined) return true;
        expect(d.state.rows, `state.rows with ${d.rescale.keysMoved} keys moved`).toBe(sent.size);
        seenMoving++;
        return false;
      },
      60_000,
      100,
    );
    console.log(`rescale-e2e: state.rows checked ${seenMoving} time(s) during the move`);
    expect(done.rescale).toBeUndefined();
    expect(done.config.partitions).toBe(7);
    // Exactly once: each id in the output once, and the answers' emitted counts add up to the ids.
    const out = (await api.output<{ id: string }>(s)).map((r) => r.id);
    expect(out.length).toBe(new Set(out).size);
    expect(new Set(out)).toEqual(sent);
    expect([...answers.values()].reduce((n, a) => n + a.emitted, 0)).toBe(sent.size);
    expect(done.state.rows).toBe(sent.size);
    expect(done.batches.committed).toBe(answers.size);
    for (const id of [...[...sent].slice(0, 40), ...[...sent].slice(-40)]) {
      const row = encodeURIComponent(JSON.stringify({ id, ts: at(10, Number(id.slice(4)) % 50) }));
      const found = await api.request("GET", `/v1/streams/${s}/state?row=${row}`);
      expect(JSON.parse(found.text).keys, id).toHaveLength(1);
    }
  }, 240_000);
});

/**
 * Changing a live stream's ingest shards against a real local server
 * (DESIGN §12): three clients send batches with repeated ids while the
 * stream goes from 2 shards to 4 and then back to 3; the server's whole
 * process group is killed (SIGKILL) a few milliseconds into each PATCH, so
 * a change may be cut short in any step; the PATCH is sent again until
 * `GET` shows it done, as an operator would. Clients retry what failed
 * under the same batch ids (a 503 while a change prepares, nothing while
 * the server is down). After: every id once in the output, the answers'
 * emitted counts add up to the ids, the state holds each once, every
 * batch's retry replays its answer, and a reused id is a 422.
 */
import { describe, expect, test } from "vitest";
import { at, pollUntil, rng, sendUntilAnswered, useServer, type Outcome } from "./server";

const { server, api } = useServer();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("shard changes under load, killed during each PATCH", () => {
  test("2 → 4 → 3 shards with three clients and two SIGKILLs: every id once, every batch replays", async () => {
    const s = "shards-e2e";
    await api.putStream(s, { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 4, shards: 2 });
    const sent = new Set<string>();
    const bodies = new Map<string, { id: string; ts: number; v: number }[]>();
    const answers = new Map<string, Outcome>();
    let killing: Promise<void> | null = null;
    const changes: number[] = [];
    // A change that prepares answers its moved ids 503 until it is done: they are sent again.
    const send = async (batchId: string, rows: { id: string; ts: number; v: number }[]) => {
      bodies.set(batchId, rows);
      answers.set(batchId, await sendUntilAnswered(api, s, batchId, rows, () => killing, 300));
    };
    const patch = (shards: number) =>
      api.request("PATCH", `/v1/streams/${s}`, { body: JSON.stringify({ shards }), headers: { "content-type": "application/json" } });
    // The PATCH and a kill a few ms into it; then the PATCH again until GET shows every shard on the count.
    const changeUnderKill = async (shards: number, afterMs: number) => {
      const first = patch(shards).catch(() => null);
      await sleep(afterMs);
      killing = server.restart("SIGKILL").finally(() => (killing = null));
      await killing;
      await first;
      const done = await pollUntil(
        async () => {
          const d = await api.stream(s);
          if (d.shardChange?.to === shards && d.shardChange.phase === "done") return d;
          const r = await patch(shards);
          expect([202, 400], r.text).toContain(r.status); // 400: it was done already
          return api.stream(s);
        },
        (d) => d.shardChange?.to === shards && d.shardChange.phase === "done",
        60_000,
        100,
      );
      changes.push(done.config.intakeShards ?? done.config.shards ?? 1);
    };
    const client = async (c: number) => {
      const random = rng(2_000 + c);
      for (let b = 0; b < 24; b++) {
        const rows = Array.from({ length: 5 }, (_, i) => {
          const id = `evt-${Math.floor(random() * 200)}`;
          sent.add(id);
          return { id, ts: at(10, Number(id.slice(4)) % 50), v: b * 100 + i };
        });
        await send(`c${c}-b${b}`, rows);
        if (c === 0 && b === 6) await changeUnderKill(4, 5);
        if (c === 0 && b === 16) await changeUnderKill(3, 15);
      }
    };
    await Promise.all([0, 1, 2].map(client));
    expect(changes).toEqual([4, 3]);
    const d = await api.stream(s);
    expect(d.config).toMatchObject({ shards: 4, intakeShards: 3 });
    expect(d.shardChange).toMatchObject({ from: 4, to: 3, earlier: [{ from: 2 }] });
    // Exactly once: each id in the output once, and the answers' emitted counts add up to the ids.
    const out = (await api.output<{ id: string }>(s)).map((r) => r.id);
    expect(out.length).toBe(new Set(out).size);
    expect(new Set(out)).toEqual(sent);
    expect([...answers.values()].reduce((n, a) => n + a.emitted, 0)).toBe(sent.size);
    expect(d.state.rows).toBe(sent.size);
    expect(d.batches.committed).toBe(answers.size);
    // Every batch's retry replays what it answered, wherever the count sends it now; a reused id is a 422.
    for (const [batchId, rows] of bodies) {
      const again = await api.ingest(s, rows, { batchId });
      expect(again, batchId).toMatchObject({ replayed: true, emitted: answers.get(batchId)!.emitted });
    }
    const reused = await api.request("POST", `/v1/streams/${s}/events`, {
      body: JSON.stringify([{ id: "other", ts: at(10, 1), v: 0 }]),
      headers: { "content-type": "application/json", "idempotency-key": "c1-b3" },
    });
    expect(reused.status).toBe(422);
  }, 240_000);
});

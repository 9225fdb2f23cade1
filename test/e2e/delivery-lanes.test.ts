/**
 * Delivery lanes (DESIGN §10, issue #30), end to end against `wrangler dev`
 * and handlers on 127.0.0.1: order per entity under random failures and
 * delays (first deliveries in commit order, never two of an entity in
 * flight, a failing entity holding up only itself), a lane change in the
 * middle of a load with a crash and restart, maxPerSecond held at the
 * handler, attempts listed by webhook-id, and ids unique across a stream's
 * delete and re-creation.
 */
import { createServer, type IncomingMessage, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SHARD_SEQ_BASE, shardOfSeq } from "../../src/stream/shards";
import { at, pollUntil, rng, useServer } from "./server";

const { server, api } = useServer();

/** What a path's handler does with one request: its status and when it answers. */
type Behaviour = (row: Record<string, unknown>, id: string) => { status: number; delayMs: number };

/** Handlers by path: every request noted (id, row, start and end), concurrency per entity tracked. */
class Handlers {
  private http!: HttpServer;
  readonly behaviours = new Map<string, Behaviour>();
  /** per path, every request as it came */
  readonly requests = new Map<string, { id: string; row: Record<string, unknown>; at: number; status: number }[]>();
  /** per path, the ids answered 2xx, in the order their first success began */
  readonly delivered = new Map<string, string[]>();
  /** per path and entity (the row's `account`): requests open now, and the most at once */
  private readonly open = new Map<string, number>();
  readonly mostAtOnce = new Map<string, number>();

  async start(): Promise<void> {
    this.http = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.http.listen(0, "127.0.0.1", r));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/${path}`;
  }

  async stop(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise((r) => this.http.close(r));
  }

  arrived(path: string): Set<string> {
    return new Set(this.delivered.get(path) ?? []);
  }

  private async handle(req: IncomingMessage, res: import("node:http").ServerResponse): Promise<void> {
    const path = (req.url ?? "").slice(1);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const id = String(req.headers["webhook-id"]);
    const row = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data: Record<string, unknown> }).data;
    const entity = `${path} ${String(row.account)}`;
    const now = (this.open.get(entity) ?? 0) + 1;
    this.open.set(entity, now);
    this.mostAtOnce.set(entity, Math.max(now, this.mostAtOnce.get(entity) ?? 0));
    const { status, delayMs } = (this.behaviours.get(path) ?? (() => ({ status: 204, delayMs: 0 })))(row, id);
    const list = this.requests.get(path) ?? this.requests.set(path, []).get(path)!;
    list.push({ id, row, at: Date.now(), status });
    if (status < 300) {
      const done = this.delivered.get(path) ?? this.delivered.set(path, []).get(path)!;
      if (!done.includes(id)) done.push(id);
    }
    setTimeout(() => {
      this.open.set(entity, this.open.get(entity)! - 1);
      res.writeHead(status).end();
    }, delayMs);
  }
}

const handlers = new Handlers();
beforeAll(() => handlers.start());
afterAll(() => handlers.stop());

const config = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 4 };
const D = (stream: string, name: string) => `/v1/streams/${stream}/destinations/${name}`;
const json = { "content-type": "application/json" };

async function getJson<T = any>(path: string): Promise<T> {
  const r = await api.request("GET", path);
  expect(r.status, r.text).toBe(200);
  return JSON.parse(r.text) as T;
}

async function putDestination(stream: string, name: string, body: Record<string, unknown>, status = 201): Promise<any> {
  const r = await api.request("PUT", D(stream, name), { body: JSON.stringify(body), headers: json });
  expect(r.status, r.text).toBe(status);
  return JSON.parse(r.text);
}

/** A webhook-id's place in commit order: [seq, index]. */
const place = (id: string) => id.split(".").slice(-2).map(Number) as [number, number];
const inCommitOrder = (ids: string[]) => [...ids].sort((a, b) => place(a)[0] - place(b)[0] || place(a)[1] - place(b)[1]);

describe("delivery lanes", () => {
  // With four ingest shards the destination reads every shard's commits: each shard's rows of an entity keep their
  // commit order, rows of one entity still go one at a time, and a failing entity still holds up only itself.
  test.each([1, 4])(
    "order per entity: commit order, one at a time, under random failures and delays; a failing entity holds up only itself; attempts listed (%i shard(s))",
    {
      timeout: 300_000,
    },
    async (shards) => {
      const s = shards === 1 ? "lanes-order" : `lanes-order-${shards}`;
      const path = shards === 1 ? "order" : `order-${shards}`;
      await api.putStream(s, { ...config, ...(shards > 1 ? { shards } : {}) });
      const random = rng(30);
      let stuck = true;
      handlers.behaviours.set(path, (row) => {
        if (row.account === "stuck" && stuck) return { status: 500, delayMs: 0 };
        const r = random();
        return { status: r < 0.2 ? 500 : 204, delayMs: Math.floor(random() * 120) };
      });
      const dest = await putDestination(s, path, { type: "http", url: handlers.url(path), timeout: "2 seconds", lanes: 4, ordering: { by: ["account"] } });
      expect(dest.destination).toMatchObject({ lanes: 4, ordering: { by: ["account"] }, maxPerSecond: null });
      expect(dest.destination.laneStatus).toHaveLength(4);

      const accounts = ["a", "b", "c", "d", "e", "f", "stuck"];
      let emitted = 0;
      for (let b = 0; b < 16; b++) {
        const rows = Array.from({ length: 8 }, (_, i) => ({ id: `${b}-${i}`, ts: at(10, b), account: accounts[Math.floor(random() * accounts.length)] }));
        emitted += (await api.ingest(s, rows, { batchId: `o${b}` })).emitted;
      }
      expect(emitted).toBe(128);
      const output = await api.output<{ id: string; account: string }>(s);
      const stuckRows = output.filter((r) => r.account === "stuck").length;
      expect(stuckRows).toBeGreaterThan(3);

      // Every other entity's rows arrive while "stuck" keeps failing.
      await pollUntil(
        async () => handlers.arrived(path).size,
        (n) => n >= emitted - stuckRows,
        90_000,
        200,
      );
      const failing = await getJson(`${D(s, path)}/attempts`);
      expect(failing.rows[0]).toMatchObject({ state: "pending", seq: expect.any(Number) });
      const head = failing.rows[0];
      expect(head.attempts.length).toBeGreaterThan(0);
      expect(head.attempts.at(-1)).toMatchObject({ status: 500, error: "HTTP 500", ms: expect.any(Number), at: expect.any(Number) });
      expect(head.nextAt).toBeGreaterThan(0);
      // The stuck entity's oldest row is the one failing; its later rows were never sent.
      const stuckIds = handlers.requests
        .get(path)!
        .filter((r) => r.row.account === "stuck")
        .map((r) => r.id);
      expect(new Set(stuckIds).size).toBe(1);
      expect(stuckIds[0]).toBe(head.id);
      const one = await getJson(`${D(s, path)}/attempts?id=${encodeURIComponent(head.id)}`);
      expect(one.rows).toHaveLength(1);
      expect(one.rows[0]).toMatchObject({ id: head.id, state: "pending" });
      expect(one.rows[0].attempts.length).toBeLessThanOrEqual(5); // the last few, bounded

      stuck = false;
      // The head's next attempt may be a backoff of up to a minute away; then its entity's rows go one at a time.
      await pollUntil(
        async () => handlers.arrived(path).size,
        (n) => n >= emitted,
        150_000,
        200,
      );
      expect(handlers.arrived(path).size).toBe(emitted);
      // For every entity: first deliveries in commit order, and never two requests of it open at once.
      const ofEntity = new Map<string, string[]>();
      const byId = new Map(handlers.requests.get(path)!.map((r) => [r.id, String(r.row.account)]));
      for (const id of handlers.delivered.get(path)!) {
        const e = byId.get(id)!;
        ofEntity.set(e, [...(ofEntity.get(e) ?? []), id]);
      }
      expect(ofEntity.size).toBe(accounts.length);
      // Each shard's rows of an entity in its commit order (with one shard: all of them; across shards, commit time orders them).
      for (const [, ids] of ofEntity) {
        for (let k = 0; k < shards; k++) {
          const mine = ids.filter((id) => shardOfSeq(place(id)[0]) === k);
          expect(mine).toEqual(inCommitOrder(mine));
        }
      }
      for (const e of accounts) expect(handlers.mostAtOnce.get(`${path} ${e}`)).toBe(1);
      // Some requests failed, so order held through retries.
      expect(handlers.requests.get(path)!.filter((r) => r.status === 500).length).toBeGreaterThan(10);

      // Attempts of a delivered row: its successful one last; an unknown or foreign id is a clear problem.
      const delivered = await getJson(`${D(s, path)}/attempts?id=${encodeURIComponent(head.id)}`);
      expect(delivered.rows[0]).toMatchObject({ state: "delivered", at: expect.any(Number) });
      expect(delivered.rows[0].attempts.at(-1)).toMatchObject({ status: 204, error: null });
      const unknown = await api.request("GET", `${D(s, path)}/attempts?id=${s}.999.0`);
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get("content-type")).toMatch(/problem\+json/);
      expect((await api.request("GET", `${D(s, path)}/attempts?id=other.1.0`)).status).toBe(400);
      // The handler counts a row on arrival; its lane records the outcome a moment after the response.
      const status = await pollUntil(
        () => getJson(D(s, path)),
        (d) => d.pending === 0,
        10_000,
      );
      // Every shard's last commit delivered: with one shard commit 16, with several each shard's own last.
      const seqs = handlers.delivered.get(path)!.map((id) => place(id)[0]);
      const last = Array.from({ length: shards }, (_, k) => Math.max(k * SHARD_SEQ_BASE, ...seqs.filter((q) => shardOfSeq(q) === k)));
      if (shards === 1) expect(last).toEqual([16]);
      const cursor = shards === 1 ? {} : { deliveredCursor: last.join(",") };
      expect(status).toMatchObject({ pending: 0, dead: 0, deliveredSeq: last[0], ...cursor });
      for (const l of status.laneStatus) expect(l).toMatchObject({ pending: 0, deliveredSeq: last[0], lagMs: 0, ...cursor });
    },
  );

  test("a lane change in the middle of a load, and a crash: every row arrives, repeats only of rows in flight", async () => {
    const s = "lanes-change";
    await api.putStream(s, config);
    handlers.behaviours.set("change", () => ({ status: 204, delayMs: 60 }));
    const body = { type: "http", url: handlers.url("change"), timeout: "2 seconds", lanes: 2 };
    await putDestination(s, "change", body);
    let emitted = 0;
    const load = async (from: number, to: number) => {
      for (let b = from; b < to; b++) {
        const rows = Array.from({ length: 20 }, (_, i) => ({ id: `${b}-${i}`, ts: at(11, b) }));
        emitted += (await api.ingest(s, rows, { batchId: `c${b}` })).emitted;
      }
    };
    await load(0, 8);
    const changed = await putDestination(s, "change", { ...body, lanes: 8 }, 200);
    expect(changed.destination.lanes).toBe(8);
    expect(changed.destination.laneStatus).toHaveLength(8);
    await load(8, 14);
    await server.restart("SIGKILL");
    await load(14, 20);
    expect(emitted).toBe(400);
    await pollUntil(
      async () => handlers.arrived("change").size,
      (n) => n >= emitted,
      120_000,
      250,
    );
    const output = await api.output<{ id: string }>(s);
    expect(handlers.arrived("change").size).toBe(output.length);
    for (const id of handlers.arrived("change")) expect(id).toMatch(/^lanes-change\.\d+\.\d+$/);
    // At least once: a row is sent again only if it was in flight when the server was killed (8 lanes × 6 at most).
    const repeats = handlers.requests.get("change")!.length - handlers.arrived("change").size;
    expect(repeats).toBeLessThanOrEqual(48);
    const status = await pollUntil(
      () => getJson(D(s, "change")),
      (d) => d.pending === 0 && d.deliveredSeq === 20,
      30_000,
      250,
    );
    expect(status.laneStatus.map((l: any) => l.deliveredSeq)).toEqual(new Array(8).fill(20));
  });

  test("maxPerSecond is held at the handler in every second, and lag shows the cost", async () => {
    const s = "lanes-cap";
    await api.putStream(s, config);
    handlers.behaviours.set("cap", () => ({ status: 204, delayMs: 0 }));
    await putDestination(s, "cap", { type: "http", url: handlers.url("cap"), maxPerSecond: 10 });
    const rows = Array.from({ length: 50 }, (_, i) => ({ id: `r${i}`, ts: at(12) }));
    const { emitted } = await api.ingest(s, rows, { batchId: "cap" });
    expect(emitted).toBe(50);
    await pollUntil(
      () => getJson(D(s, "cap")),
      (d) => d.pending > 0 && d.lagMs > 0,
      10_000,
      100,
    );
    await pollUntil(
      async () => handlers.arrived("cap").size,
      (n) => n >= emitted,
      30_000,
      200,
    );
    const times = handlers.requests.get("cap")!.map((r) => r.at);
    for (const t of times) expect(times.filter((u) => u >= t && u < t + 1_000).length).toBeLessThanOrEqual(10);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(3_500);
    expect((await getJson(D(s, "cap"))).maxPerSecond).toBe(10);
  });

  test("webhook-ids are never reused: a re-created stream's rows carry new ids", async () => {
    const s = "lanes-again";
    const ids: string[][] = [];
    handlers.behaviours.set("again", () => ({ status: 204, delayMs: 0 }));
    for (let round = 0; round < 2; round++) {
      await api.putStream(s, config);
      await putDestination(s, "d", { type: "http", url: handlers.url("again") });
      await api.ingest(s, [{ id: "same", ts: at(13) }], { batchId: "x" });
      await pollUntil(
        async () => handlers.arrived("again").size,
        (n) => n >= round + 1,
        30_000,
        100,
      );
      ids.push([...handlers.arrived("again")].slice(round));
      expect((await api.request("DELETE", `/v1/streams/${s}`)).status).toBe(204);
    }
    expect(ids[0]).toEqual([`${s}.1.0`]);
    expect(ids[1]).toHaveLength(1);
    expect(ids[1][0]).toMatch(new RegExp(`^${s}~\\d+\\.1\\.0$`));
  });
});

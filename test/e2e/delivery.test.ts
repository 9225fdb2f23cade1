/**
 * Delivery to a real handler (DESIGN §10), end to end: `wrangler dev` POSTs
 * each emitted row to a receiver on 127.0.0.1 that verifies every signature
 * with the standardwebhooks package, fails a share of requests with 500 and
 * answers some too late (the destination's timeout). Every emitted row
 * arrives, under distinct webhook-ids, with the output's rows as bodies,
 * through a crash (SIGKILL) and restart in the middle; a handler that keeps
 * failing fills the dead lane, and replay sends those rows again; a 410
 * pauses its destination.
 */
import { createServer, type IncomingMessage, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SHARD_SEQ_BASE, shardOfSeq } from "../../src/stream/shards";
import { at, pollUntil, rng, sleep, useServer } from "./server";

const { server, api } = useServer();

type Mode = "flaky" | "fail" | "ok" | "gone" | "hang" | "throttle";
interface Delivery {
  id: string;
  body: string;
  attempts: number;
}

/** The handler under test: one per path, each with its own secret and behaviour. */
class Receiver {
  private http!: HttpServer;
  readonly secrets = new Map<string, string>();
  readonly modes = new Map<string, Mode>();
  /** verified deliveries per path, by webhook-id */
  readonly got = new Map<string, Map<string, Delivery>>();
  readonly badSignatures: string[] = [];
  /** when each attempt of an id came (throttle mode) */
  readonly attemptsAt = new Map<string, number[]>();
  readonly bodyChanged: string[] = [];
  requests = 0;
  private readonly random = rng(17);

  async start(): Promise<void> {
    this.http = createServer(
      (req, res) =>
        void this.handle(req).then(({ status, delayMs, retryAfter }) =>
          setTimeout(() => res.writeHead(status, retryAfter ? { "retry-after": retryAfter } : {}).end(), delayMs),
        ),
    );
    await new Promise<void>((r) => this.http.listen(0, "127.0.0.1", r));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/${path}`;
  }

  async stop(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise((r) => this.http.close(r));
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; delayMs: number; retryAfter?: string }> {
    this.requests++;
    const path = (req.url ?? "").slice(1);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const secret = this.secrets.get(path);
    const mode = this.modes.get(path) ?? "ok";
    const headers = {
      "webhook-id": String(req.headers["webhook-id"]),
      "webhook-timestamp": String(req.headers["webhook-timestamp"]),
      "webhook-signature": String(req.headers["webhook-signature"]),
    };
    try {
      new Webhook(secret!).verify(body, headers);
    } catch (e) {
      this.badSignatures.push(`${path} ${headers["webhook-id"]}: ${(e as Error).message}`);
      return { status: 401, delayMs: 0 };
    }
    if (mode === "gone") return { status: 410, delayMs: 0 };
    if (mode === "hang") return { status: 204, delayMs: 25_000 };
    if (mode === "throttle") {
      const times = this.attemptsAt.get(headers["webhook-id"]) ?? this.attemptsAt.set(headers["webhook-id"], []).get(headers["webhook-id"])!;
      times.push(Date.now());
      if (times.length === 1) return { status: 429, delayMs: 0, retryAfter: "3" };
    }
    if (mode === "fail") return { status: 500, delayMs: 0 };
    const r = this.random();
    if (mode === "flaky" && r < 0.25) return { status: 500, delayMs: 0 };
    // Answered after the destination's 1 s timeout: the sender gives up on it and retries (the row may well count as received here: at least once).
    const late = mode === "flaky" && r < 0.32;
    const seen = (this.got.get(path) ?? this.got.set(path, new Map()).get(path)!).get(headers["webhook-id"]);
    if (seen && seen.body !== body) this.bodyChanged.push(headers["webhook-id"]);
    this.got.get(path)!.set(headers["webhook-id"], { id: headers["webhook-id"], body, attempts: (seen?.attempts ?? 0) + 1 });
    return late ? { status: 200, delayMs: 1_500 } : { status: 204, delayMs: 0 };
  }
}

const receiver = new Receiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

const config = { key: ["id"], eventTime: "ts", watermarkDelay: "1 hour", partitions: 4 };
const D = (stream: string, name: string) => `/v1/streams/${stream}/destinations/${name}`;

async function getJson<T = any>(path: string): Promise<T> {
  const r = await api.request("GET", path);
  expect(r.status, r.text).toBe(200);
  return JSON.parse(r.text) as T;
}

async function putDestination(stream: string, name: string, body: Record<string, unknown>): Promise<string> {
  const r = await api.request("PUT", D(stream, name), { body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  expect(r.status, r.text).toBe(201);
  return JSON.parse(r.text).secret as string;
}

/** Batches with overlapping ids: batch b carries ids 8b..8b+9, so two of each batch's ten repeat the previous one. */
const batch = (b: number) => Array.from({ length: 10 }, (_, i) => ({ id: 8 * b + i, ts: at(10, b % 60), b }));

describe("http destinations", () => {
  // With four ingest shards (DESIGN §12) the destination reads each shard's commits through a cursor of its own.
  test.each([1, 4])("every emitted row reaches a flaky, slow handler once per id with its body, through a crash and restart (%i shard(s))", async (shards) => {
    const s = shards === 1 ? "deliver" : `deliver-${shards}`;
    const flaky = `flaky-${shards}`;
    await api.putStream(s, { ...config, ...(shards > 1 ? { shards } : {}) });
    // Down at first, so that a backlog (rows failed, waiting for their retry) is there when the server crashes.
    receiver.modes.set(flaky, "fail");
    receiver.secrets.set(flaky, await putDestination(s, flaky, { type: "http", url: receiver.url(flaky), timeout: "1 second" }));
    let emitted = 0;
    for (let b = 0; b < 12; b++) emitted += (await api.ingest(s, batch(b), { batchId: `b${b}` })).emitted;
    const before = await pollUntil(
      () => getJson(D(s, flaky)),
      (d) => d.failing && d.pending > 0,
      30_000,
      250,
    );
    expect(before).toMatchObject({ failing: true, deliveredSeq: 0, lastError: "HTTP 500" });
    // A crash in the middle: the backlog, and deliveries in flight, survive it.
    await server.restart("SIGKILL");
    receiver.modes.set(flaky, "flaky");
    for (let b = 12; b < 24; b++) emitted += (await api.ingest(s, batch(b), { batchId: `b${b}` })).emitted;
    expect(emitted).toBe(24 * 8 + 2);

    const got = () => receiver.got.get(flaky) ?? new Map<string, Delivery>();
    await pollUntil(
      async () => got().size,
      (n) => n >= emitted,
      150_000,
      250,
    );
    expect(receiver.badSignatures).toEqual([]);
    expect(receiver.bodyChanged).toEqual([]);
    expect(got().size).toBe(emitted);
    // Bodies = the output, row for row; ids = {stream}.{seq}.{index}.
    const bodies = [...got().values()].map((d) => JSON.parse(d.body));
    for (const b of bodies) expect(b).toMatchObject({ type: "row.emitted", timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const byId = (rows: { id: number }[]) => [...rows].sort((a, b) => a.id - b.id);
    expect(byId(bodies.map((b) => b.data))).toEqual(byId(await api.output<{ id: number }>(s)));
    for (const id of got().keys()) expect(id).toMatch(new RegExp(`^${s}\\.\\d+\\.\\d$`));
    // Some requests failed or timed out, so retries happened.
    expect(receiver.requests).toBeGreaterThan(emitted);

    // Every shard's last commit delivered: with one shard commit 24, with several each shard's own last.
    const seqs = [...got().keys()].map((id) => Number(id.split(".")[1]));
    const last = Array.from({ length: shards }, (_, k) => Math.max(k * SHARD_SEQ_BASE, ...seqs.filter((q) => shardOfSeq(q) === k)));
    if (shards === 1) expect(last).toEqual([24]);
    else expect(last.every((q, k) => q > k * SHARD_SEQ_BASE)).toBe(true); // every shard judged some of the 24 batches
    const status = await pollUntil(
      () => getJson(D(s, flaky)),
      (d) => d.pending === 0 && d.deliveredSeq === last[0] && (shards === 1 || d.deliveredCursor === last.join(",")),
      30_000,
      250,
    );
    expect(status).toMatchObject({ deliveredSeq: last[0], pending: 0, lagMs: 0, dead: 0, paused: false });
    expect(status.lastSuccessAt).toBeGreaterThan(0);
    expect(status.delivered).toBeGreaterThanOrEqual(emitted);
    expect(status.failures).toBeGreaterThan(0);
  });

  test("a handler that keeps failing fills the dead lane; replay sends those rows again, same ids; 410 pauses", async () => {
    const s = "deliver-dead";
    await api.putStream(s, config);
    receiver.modes.set("down", "fail");
    receiver.secrets.set("down", await putDestination(s, "down", { type: "http", url: receiver.url("down"), timeout: "1 second", retryFor: "3 seconds" }));
    receiver.modes.set("gone", "gone");
    receiver.secrets.set("gone", await putDestination(s, "gone", { type: "http", url: receiver.url("gone"), timeout: "1 second" }));
    let emitted = 0;
    for (let b = 0; b < 3; b++) emitted += (await api.ingest(s, batch(b), { batchId: `d${b}` })).emitted;
    const dead = await pollUntil(
      () => getJson(`${D(s, "down")}/dead`),
      (p) => p.rows.length === emitted,
      60_000,
      250,
    );
    expect(dead.rows).toHaveLength(emitted);
    expect(new Set(dead.rows.map((r: any) => r.id)).size).toBe(emitted);
    expect(dead.rows[0]).toMatchObject({ seq: 1, index: 0, lastError: "HTTP 500" });
    // Each dead row keeps its last attempts (at most 5), the last one the 500 that ended it; no row bytes in them.
    for (const r of dead.rows) {
      expect(r.history.length).toBeGreaterThan(0);
      expect(r.history.length).toBeLessThanOrEqual(5);
      expect(r.history.at(-1)).toMatchObject({ status: 500, error: "HTTP 500" });
    }
    const down = await getJson(D(s, "down"));
    expect(down).toMatchObject({ deliveredSeq: 3, pending: 0, dead: emitted, failing: false });
    expect(receiver.got.get("down")).toBeUndefined();

    const gone = await pollUntil(
      () => getJson(D(s, "gone")),
      (d) => d.paused,
      30_000,
      250,
    );
    expect(gone).toMatchObject({ paused: true, failing: true, deliveredSeq: 0 });
    expect(gone.lastError).toMatch(/410/);

    // The handler is fixed: replay from the first commit.
    receiver.modes.set("down", "ok");
    const r = await api.request("POST", `${D(s, "down")}/replay`, { body: JSON.stringify({ fromSeq: 1 }), headers: { "content-type": "application/json" } });
    expect(r.status, r.text).toBe(202);
    expect(JSON.parse(r.text)).toEqual({ fromSeq: 1, fromDead: emitted });
    await pollUntil(
      async () => receiver.got.get("down")?.size ?? 0,
      (n) => n >= emitted,
      30_000,
      250,
    );
    expect([...receiver.got.get("down")!.keys()].sort()).toEqual(dead.rows.map((r: any) => r.id).sort());
    const after = await pollUntil(
      () => getJson(D(s, "down")),
      (d) => d.pending === 0,
      10_000,
      250,
    );
    expect(after).toMatchObject({ deliveredSeq: 3, dead: 0 });
    expect((await getJson(`${D(s, "down")}/dead`)).rows).toEqual([]);

    // PUT again resumes the paused one; its rows arrive.
    receiver.modes.set("gone", "ok");
    const resumed = await api.request("PUT", D(s, "gone"), {
      body: JSON.stringify({ type: "http", url: receiver.url("gone"), timeout: "1 second" }),
      headers: { "content-type": "application/json" },
    });
    expect(resumed.status).toBe(200);
    await pollUntil(
      async () => receiver.got.get("gone")?.size ?? 0,
      (n) => n >= emitted,
      30_000,
      250,
    );
    expect(receiver.got.get("gone")!.size).toBe(emitted);
    expect(receiver.badSignatures).toEqual([]);
    await sleep(0);
  });

  test("Retry-After is honoured", async () => {
    const s = "deliver-throttle";
    await api.putStream(s, config);
    receiver.modes.set("throttle", "throttle");
    receiver.secrets.set("throttle", await putDestination(s, "t", { type: "http", url: receiver.url("throttle") }));
    const { emitted } = await api.ingest(s, batch(0), { batchId: "t0" });
    await pollUntil(
      async () => receiver.got.get("throttle")?.size ?? 0,
      (n) => n >= emitted,
      30_000,
      100,
    );
    expect(receiver.got.get("throttle")!.size).toBe(emitted);
    const ids = [...receiver.attemptsAt.keys()].filter((id) => id.startsWith(`${s}.`));
    expect(ids).toHaveLength(emitted);
    for (const id of ids) {
      const [first, second] = receiver.attemptsAt.get(id)!;
      // Backoff alone would have retried after 0.5-1 s; the 429 asked for 3 s.
      expect(second - first).toBeGreaterThanOrEqual(2_900);
    }
  });

  test("a handler that hangs slows neither ingest nor another destination", async () => {
    const s = "deliver-hang";
    await api.putStream(s, config);
    receiver.modes.set("hang", "hang");
    receiver.secrets.set("hang", await putDestination(s, "hang", { type: "http", url: receiver.url("hang"), timeout: "30 seconds" }));
    receiver.modes.set("brisk", "ok");
    receiver.secrets.set("brisk", await putDestination(s, "brisk", { type: "http", url: receiver.url("brisk"), timeout: "30 seconds" }));
    let emitted = 0;
    for (let b = 0; b < 5; b++) {
      const started = Date.now();
      emitted += (await api.ingest(s, batch(b), { batchId: `h${b}` })).emitted;
      expect(Date.now() - started).toBeLessThan(2_000);
    }
    await pollUntil(
      async () => receiver.got.get("brisk")?.size ?? 0,
      (n) => n >= emitted,
      10_000,
      100,
    );
    expect(receiver.got.get("brisk")!.size).toBe(emitted);
    const hung = await getJson(D(s, "hang"));
    expect(hung.deliveredSeq).toBe(0);
    expect(hung.pending).toBeGreaterThan(0);
    expect(hung.lagMs).toBeGreaterThan(0);
  });

  test("/metrics and the dashboard show each destination's lag and failures", async () => {
    const s = "deliver-watch";
    await api.putStream(s, config);
    receiver.modes.set("watch-ok", "ok");
    receiver.secrets.set("watch-ok", await putDestination(s, "ok", { type: "http", url: receiver.url("watch-ok") }));
    receiver.modes.set("watch-down", "fail");
    receiver.secrets.set("watch-down", await putDestination(s, "down", { type: "http", url: receiver.url("watch-down") }));
    await api.ingest(s, batch(0), { batchId: "w0" });
    await pollUntil(
      () => getJson(D(s, "down")),
      (d) => d.failing && d.lastError === "HTTP 500",
      30_000,
      250,
    );
    await pollUntil(
      () => getJson(D(s, "ok")),
      (d) => d.deliveredSeq === 1,
      30_000,
      250,
    );
    const metrics = (await api.request("GET", "/metrics")).text;
    expect(metrics).toContain('edge_dedup_delivery_failing{stream="deliver-watch",destination="down",type="http"} 1');
    expect(metrics).toContain('edge_dedup_delivery_failing{stream="deliver-watch",destination="ok",type="http"} 0');
    expect(metrics).toContain('edge_dedup_delivery_lag_ms{stream="deliver-watch",destination="ok",type="http"} 0');
    expect(metrics).toMatch(/edge_dedup_delivery_lag_ms\{stream="deliver-watch",destination="down",type="http"\} [1-9]\d*/);
    expect(metrics).toContain('edge_dedup_deliveries_total{stream="deliver-watch",destination="ok",type="http",outcome="delivered"} 10');

    const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
    if (!existsSync(CHROMIUM))
      throw new Error(`the dashboard check needs a headless chromium at ${CHROMIUM} (apt-get install -y chromium), or set CHROMIUM_PATH`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}/dashboard#stream=${s}`);
      await page.fill("#token", server.token);
      await page.click("#connect");
      await page.waitForSelector('#delivery-table tr[data-destination="down"]', { timeout: 20_000 });
      const cell = async (name: string, figure: string) => ((await page.textContent(`tr[data-destination="${name}"] [data-figure="${figure}"]`)) ?? "").trim();
      expect(await cell("down", "failing")).toBe("yes");
      expect(await cell("ok", "failing")).toBe("no");
      expect(await cell("ok", "delivered-seq")).toBe("1");
      expect(await cell("ok", "lag")).toBe("0");
      expect(await cell("down", "lag")).not.toBe("0");
      expect(await page.textContent('tr[data-destination="down"]')).toContain("HTTP 500");
    } finally {
      await browser.close();
    }
  });
});

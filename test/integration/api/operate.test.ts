import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { app } from "../../../src/api/app";
import { at, call, createStream, json, post } from "../helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes" };

/** Parses the Prometheus text format into samples. */
function parseMetrics(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(l);
      if (!m) throw new Error(`not a sample: ${l}`);
      const labels: Record<string, string> = {};
      for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v.replace(/\\(.)/g, "$1");
      return { name: m[1], labels, value: Number(m[3]) };
    });
}

async function metricsOf(stream: string) {
  const r = await call("GET", "/metrics");
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const samples = parseMetrics(await r.text()).filter((s) => s.labels.stream === stream);
  const get = (name: string, labels: Record<string, string> = {}) =>
    samples.find(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) && (labels.source !== undefined || !("source" in s.labels)),
    )?.value;
  return { samples, get };
}

describe("GET /v1/streams", () => {
  it("lists registered streams by name, a page at a time, with watermark and state; deleted ones leave", async () => {
    for (const n of ["op-l-a", "op-l-b", "op-l-c"]) await createStream(n, base);
    await post("op-l-b", [
      { id: "x", ts: at(10, 0) },
      { id: "y", ts: at(10, 1) },
    ]);
    const page1 = await json(call("GET", "/v1/streams?after=op-l-&limit=2"));
    expect(page1.streams.map((s: any) => s.name)).toEqual(["op-l-a", "op-l-b"]);
    expect(page1.next).toBe("op-l-b");
    expect(page1.streams[1]).toMatchObject({ watermark: at(9, 56), state: { rows: 2 }, batches: { committed: 1 } });
    expect(page1.streams[1].createdAt).toBeTypeOf("number");
    const page2 = await json(call("GET", `/v1/streams?after=${page1.next}&limit=2`));
    expect(page2.streams[0].name).toBe("op-l-c");
    expect((await call("DELETE", "/v1/streams/op-l-a")).status).toBe(204);
    const after = await json(call("GET", "/v1/streams?after=op-l-&limit=100"));
    expect(after.streams.map((s: any) => s.name).filter((n: string) => n.startsWith("op-l-"))).toEqual(["op-l-b", "op-l-c"]);
  });

  it("is admin only and bounds its limit", async () => {
    expect((await call("GET", "/v1/streams", undefined, { authorization: "" })).status).toBe(401);
    expect((await call("GET", "/v1/streams?limit=101")).status).toBe(400);
    expect((await call("POST", "/v1/streams")).status).toBe(405);
  });
});

describe("GET /healthz", () => {
  it("answers 200 without credentials when the bindings answer", async () => {
    const r = await call("GET", "/healthz", undefined, { authorization: "" });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ok" });
  });

  it("answers 503 problem+json, without details, when a binding does not", async () => {
    const broken = { ...env, SINK: { head: () => Promise.reject(new Error("R2 is down: secret detail")) } };
    const r = await app.fetch(new Request("http://edge-dedup.test/healthz"), broken as any);
    expect(r.status).toBe(503);
    expect(r.headers.get("content-type")).toBe("application/problem+json");
    expect(await r.text()).not.toContain("secret detail");
  });
});

describe("GET /v1/streams/{stream}/health", () => {
  it("ok for a healthy stream; 404 for a missing one", async () => {
    await createStream("op-h-ok", base);
    await post("op-h-ok", [{ id: "a", ts: at(10, 0) }]);
    expect(await json(call("GET", "/v1/streams/op-h-ok/health"))).toMatchObject({ stream: "op-h-ok", status: "ok", reasons: [], heldBackBy: null });
    expect((await call("GET", "/v1/streams/op-h-none/health")).status).toBe(404);
  });

  it("names the source holding the min back, and says the watermark is stalled while rows arrive", async () => {
    await createStream("op-h-held", { ...base, sources: { fast: {}, quiet: {} } });
    for (let i = 0; i < 5; i++) await post("op-h-held", [{ id: `r${i}`, ts: at(10, i) }], { "x-source": "fast" });
    const h = await json(call("GET", "/v1/streams/op-h-held/health"));
    expect(h.heldBackBy).toBe("quiet");
    expect(h.status).toBe("critical");
    expect(h.reasons.map((r: any) => r.code).sort()).toEqual(["held-back", "watermark-stalled"]);
    expect(h).toMatchObject({ watermark: 0, watermarkLagMs: at(9, 59), window: { batches: 5, rows: 5 } });
  });

  it("reports the late and rejected rates of recent batches", async () => {
    await createStream("op-h-late", base);
    await post("op-h-late", [{ id: "a", ts: at(12, 0) }]);
    await post(
      "op-h-late",
      Array.from({ length: 30 }, (_, i) => ({ id: `old${i}`, ts: at(10, 0) })),
    );
    const h = await json(call("GET", "/v1/streams/op-h-late/health"));
    expect(h.reasons).toEqual([expect.objectContaining({ code: "late-rate", severity: "critical" })]);
    expect(h.window).toMatchObject({ rows: 31, late: 30 });
  });
});

describe("idle sources", () => {
  it("a silent source leaves the min (at the alarm); its rows behind the watermark are late when it returns; it rejoins the min", async () => {
    const name = "op-idle";
    await createStream(name, { ...base, sources: { slow: { idleTimeout: "2 seconds" } } });
    await post(name, [{ id: "s1", ts: at(10, 0) }], { "x-source": "slow" });
    const f = await post(name, [{ id: "f1", ts: at(11, 0) }], { "x-source": "fast" });
    expect(f.watermarkAfter).toBe(at(9, 55));
    await sleep(2_100);
    // No commit since: the alarm set for slow's idle moment moves it (it may have fired already).
    await runDurableObjectAlarm(env.COORDINATOR.getByName(name));
    const d = await json(call("GET", `/v1/streams/${name}`));
    expect(d.watermark).toBe(at(10, 55));
    expect(d.sources.slow).toMatchObject({ idle: true, watermark: at(9, 55) });
    expect(d.sources.fast).toMatchObject({ idle: false });
    const health = await json(call("GET", `/v1/streams/${name}/health`));
    expect(health).toMatchObject({ heldBackBy: null, idleSources: ["slow"] });

    // slow returns: judged by the watermark in force, its old row is late (counted, in the late lane).
    const back = await post(
      name,
      [
        { id: "s2", ts: at(10, 5) },
        { id: "s3", ts: at(11, 30) },
      ],
      { "x-source": "slow" },
    );
    expect(back).toMatchObject({ watermark: at(10, 55), late: 1, emitted: 1, watermarkAfter: at(10, 55) });
    const late = new TextDecoder().decode(await (await call("GET", `/v1/streams/${name}/late`)).arrayBuffer());
    expect(late).toContain('"id":"s2"');
    // …and it is in the min again: fast alone would give 11:55.
    const f2 = await post(name, [{ id: "f2", ts: at(12, 0) }], { "x-source": "fast" });
    expect(f2.watermarkAfter).toBe(at(11, 25));
    expect((await json(call("GET", `/v1/streams/${name}`))).sources.slow.idle).toBe(false);
  });

  it("with every source idle nothing moves; the next commit of another source moves the watermark past the idle one", async () => {
    const name = "op-idle-2";
    await createStream(name, { ...base, idleTimeout: "1 second" });
    await post(name, [{ id: "s1", ts: at(10, 0) }], { "x-source": "slow" });
    await sleep(1_100);
    await runDurableObjectAlarm(env.COORDINATOR.getByName(name));
    const d = await json(call("GET", `/v1/streams/${name}`));
    expect(d).toMatchObject({ watermark: at(9, 55), sources: { slow: { idle: true } } });
    const f = await post(name, [{ id: "f1", ts: at(11, 1) }], { "x-source": "fast" });
    expect(f.watermarkAfter).toBe(at(10, 56));
  });
});

describe("GET /metrics", () => {
  it("counts rows by source and outcome, batches, durations; gauges for watermark and state; survives eviction", async () => {
    const name = "op-m";
    await createStream(name, base);
    await post(
      name,
      [
        { id: "a", ts: at(10, 0) },
        { id: "a", ts: at(10, 0) },
        { id: "b", ts: at(10, 1) },
      ],
      { "x-source": "web" },
    );
    await post(name, [{ id: "c", ts: at(9, 0) }, { id: "d" }, { id: "e", ts: at(10, 2) }], { "x-source": "app" });
    expect((await call("GET", "/metrics", undefined, { authorization: "" })).status).toBe(401);
    const check = async () => {
      const { get, samples } = await metricsOf(name);
      expect(get("edge_dedup_rows_total", { source: "web", outcome: "emitted" })).toBe(2);
      expect(get("edge_dedup_rows_total", { source: "web", outcome: "duplicate" })).toBe(1);
      expect(get("edge_dedup_rows_total", { source: "app", outcome: "late" })).toBe(1);
      expect(get("edge_dedup_rows_total", { source: "app", outcome: "rejected" })).toBe(1);
      expect(get("edge_dedup_rows_total", { source: "app", outcome: "emitted" })).toBe(1);
      expect(get("edge_dedup_batches_total")).toBe(2);
      expect(get("edge_dedup_watermark_ms")).toBe(at(9, 56));
      expect(get("edge_dedup_watermark_ms", { source: "web" })).toBe(at(9, 56));
      expect(get("edge_dedup_watermark_ms", { source: "app" })).toBe(at(9, 57));
      expect(get("edge_dedup_state_rows")).toBe(3);
      expect(get("edge_dedup_state_bytes")).toBeGreaterThan(0);
      // The stream's own records (DESIGN §9): the Coordinator's storage and the ids it remembers.
      expect(get("edge_dedup_bookkeeping_bytes")).toBeGreaterThan(0);
      expect(get("edge_dedup_batches_remembered")).toBe(2);
      const buckets = samples.filter((s) => s.name === "edge_dedup_batch_duration_seconds_bucket");
      expect(buckets.at(-1)!.labels.le).toBe("+Inf");
      expect(buckets.at(-1)!.value).toBe(2);
      buckets.forEach((b, i) => i > 0 && expect(b.value).toBeGreaterThanOrEqual(buckets[i - 1].value));
      expect(get("edge_dedup_batch_duration_seconds_count")).toBe(2);
      expect(get("edge_dedup_batch_duration_seconds_sum")).toBeGreaterThanOrEqual(0);
    };
    await check();
    // A replayed batch adds nothing.
    await post(
      name,
      [
        { id: "a", ts: at(10, 0) },
        { id: "a", ts: at(10, 0) },
        { id: "b", ts: at(10, 1) },
      ],
      { "x-source": "web", "idempotency-key": "same" },
    );
    await post(
      name,
      [
        { id: "a", ts: at(10, 0) },
        { id: "a", ts: at(10, 0) },
        { id: "b", ts: at(10, 1) },
      ],
      { "x-source": "web", "idempotency-key": "same" },
    );
    const { get } = await metricsOf(name);
    expect(get("edge_dedup_batches_total")).toBe(3);
    expect(get("edge_dedup_rows_total", { source: "web", outcome: "duplicate" })).toBe(4);
    await evictDurableObject(env.COORDINATOR.getByName(name));
    expect((await metricsOf(name)).get("edge_dedup_batches_total")).toBe(3);
  });
});

describe("the commit log", () => {
  it("writes one JSON line per micro-batch commit, with the stream and its counts", async () => {
    await createStream("logged", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes" });
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    try {
      await post("logged", [
        { id: "a", ts: at(10, 0) },
        { id: "a", ts: at(10, 0) },
        { id: "b", ts: at(9, 0) },
      ]);
    } finally {
      spy.mockRestore();
    }
    const mine = lines
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l))
      .filter((l) => l.stream === "logged");
    expect(mine).toEqual([
      expect.objectContaining({ stream: "logged", batches: 1, emitted: 2, duplicates: 1, late: 0, rejected: 0, watermarkAfter: at(9, 55) }),
    ]);
  });
});

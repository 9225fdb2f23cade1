/**
 * Operating it on a real `wrangler dev` with state on disk: the Registry
 * (migration v3) lists streams, /healthz answers without a credential, and the
 * /metrics counters survive a crash and restart (they live in SQLite).
 */
import { describe, expect, test } from "vitest";
import { at, useServer } from "./server";

const { server, api } = useServer();

function sample(text: string, line: string): number | undefined {
  const hit = text.split("\n").find((l) => l.startsWith(line + " "));
  return hit === undefined ? undefined : Number(hit.slice(line.length + 1));
}

describe("operating it under wrangler dev", () => {
  test("registry, healthz, health and metrics; counters survive a SIGKILL restart", async () => {
    await api.putStream("ops-a", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes" });
    await api.putStream("ops-b", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes" });
    await api.ingest("ops-a", [{ id: "x", ts: at(10) }, { id: "x", ts: at(10) }, { id: "y" }], { source: "web" });

    const healthz = await api.request("GET", "/healthz", { token: null });
    expect(healthz.status).toBe(200);
    expect(JSON.parse(healthz.text)).toEqual({ status: "ok" });

    const list = JSON.parse((await api.request("GET", "/v1/streams")).text);
    expect(list.streams.map((s: { name: string }) => s.name)).toEqual(["ops-a", "ops-b"]);
    expect(list.streams[0]).toMatchObject({ watermark: at(9, 55), state: { rows: 1 }, batches: { committed: 1 } });

    const health = JSON.parse((await api.request("GET", "/v1/streams/ops-a/health")).text);
    expect(health).toMatchObject({ stream: "ops-a", heldBackBy: null });

    const expectCounters = async () => {
      const m = await api.request("GET", "/metrics");
      expect(m.status).toBe(200);
      expect(sample(m.text, 'edge_dedup_rows_total{stream="ops-a",source="web",outcome="emitted"}')).toBe(1);
      expect(sample(m.text, 'edge_dedup_rows_total{stream="ops-a",source="web",outcome="duplicate"}')).toBe(1);
      expect(sample(m.text, 'edge_dedup_rows_total{stream="ops-a",source="web",outcome="rejected"}')).toBe(1);
      expect(sample(m.text, 'edge_dedup_batches_total{stream="ops-a"}')).toBe(1);
      expect(sample(m.text, 'edge_dedup_batches_total{stream="ops-b"}')).toBe(0);
      expect(sample(m.text, 'edge_dedup_watermark_ms{stream="ops-a"}')).toBe(at(9, 55));
    };
    await expectCounters();
    await server.restart("SIGKILL");
    await expectCounters();
    expect((await api.request("GET", "/healthz", { token: null })).status).toBe(200);
  });
});

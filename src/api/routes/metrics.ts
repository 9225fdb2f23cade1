import { coordinatorStub, registryStub } from "../../env";
import { renderPrometheus, type StreamMetrics } from "../../stream/metrics";
import { deliveryMetrics } from "../../delivery/collect";
import { route } from "../route";

/** Streams asked at once for /metrics. */
const METRICS_PAGE = 50;

// Prometheus text exposition of every registered stream's counters and gauges.
export const metrics = route({
  method: "get",
  path: "/metrics",
  summary: "Prometheus text exposition of every stream",
  tag: "operate",
  auth: "admin",
  responses: { 200: { media: "text/plain", description: "counters and gauges" } },
  handler: async (c) => {
    const figures: StreamMetrics[] = [];
    const names: string[] = [];
    for (let after = ""; ; ) {
      const page = await registryStub(c.env).list(after, METRICS_PAGE);
      names.push(...page.map((s) => s.name));
      const got = await Promise.all(page.map(async (s) => (await coordinatorStub(c.env, s.name).metrics()) as StreamMetrics | null));
      for (const m of got) if (m) figures.push(m);
      if (page.length < METRICS_PAGE) break;
      after = page[page.length - 1].name;
    }
    return c.body(renderPrometheus(figures) + (await deliveryMetrics(c.env, names)), 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
      "cache-control": "no-store",
    });
  },
});

export const routes = [metrics];

import { registryStub } from "../../env";
import { HttpError } from "../../http/problem";
import { route } from "../route";
import { healthzSchema } from "../schemas";

// Operating it (README, Operating it). Liveness of the Worker and its bindings: no auth, no details.
export const healthz = route({
  method: "get",
  path: "/healthz",
  summary: "Liveness of the Worker and its bindings",
  tag: "operate",
  auth: "public",
  description: "200 when the Worker, the registry Durable Object and R2 answer; 503 problem+json otherwise, without details.",
  responses: { 200: { schema: healthzSchema, description: '{"status":"ok"}' } },
  handler: async (c) => {
    try {
      await Promise.all([registryStub(c.env).ping(), c.env.SINK.head("healthz/absent")]);
    } catch (e) {
      console.error("healthz", e instanceof Error ? e.message : String(e));
      throw new HttpError(503, "unavailable", "Service unavailable", "the service is not available");
    }
    return c.json({ status: "ok" as const }, 200, { "cache-control": "no-store" });
  },
});

export const routes = [healthz];

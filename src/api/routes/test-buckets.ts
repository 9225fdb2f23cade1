import { Hono } from "hono";
import { requireAdmin } from "../auth";
import type { Env } from "../../env";
import { faultsEnabled } from "../../instrument/faults";

/** Test-only routes (below); the runs themselves are declared in src/api/routes/runs.ts. */
export const testRoutes = new Hono<{ Bindings: Env; Variables: { stream: string } }>();

// Test builds only (__FAULTS__, like src/instrument/faults.ts): the end-to-end tests put
// input objects into the local INPUT bucket of a running `wrangler dev` with
// PUT /__test/input/{key}, and read what the service wrote to its SINK bucket
// (the Iceberg table, for an independent reader) with GET /__test/sink/{key}
// (admin). A deployed Worker has no such routes.
if (faultsEnabled()) {
  testRoutes.get("/__test/sink/*", async (c) => {
    await requireAdmin(c.req.header("authorization"), c.env);
    const key = decodeURIComponent(new URL(c.req.url).pathname.slice("/__test/sink/".length));
    const obj = await c.env.SINK.get(key);
    return obj ? new Response(obj.body) : c.body(null, 404);
  });
  testRoutes.put("/__test/input/*", async (c) => {
    await requireAdmin(c.req.header("authorization"), c.env);
    const key = decodeURIComponent(new URL(c.req.url).pathname.slice("/__test/input/".length));
    const obj = await c.env.INPUT.put(key, await c.req.arrayBuffer());
    return c.json({ key, etag: obj?.etag }, 201);
  });
}

import { Hono } from "hono";
import { requireAdmin } from "../../api/auth";
import { badRequest, HttpError, notFound } from "../../api/problem";
import { coordinatorStub, runnerStub, type Env } from "../../env";
import { faultsEnabled } from "../../faults";
import { zodErrors } from "../../stream/config";
import { publicationOf } from "./publication";
import { runBody } from "./run-body";

/**
 * POST /v1/streams/{stream}/runs and GET …/runs/{id} (admin; the stream name
 * and the admin token are checked by the app's /v1 middleware). Mounted by
 * src/api/app.ts; the work itself is the Runner's (./runner.ts).
 */
export const runRoutes = new Hono<{ Bindings: Env; Variables: { stream: string } }>();

const RUNS = "/v1/streams/:stream/runs";
const PUBLICATION = "/v1/streams/:stream/publication";
/** The default source of file runs, and of R2 event notifications: both name an object's batch alike, so they replay each other. */
export const FILES_SOURCE = "files";

runRoutes.post(RUNS, async (c) => {
  const parsed = runBody.safeParse(await c.req.json().catch(() => undefined));
  if (!parsed.success) throw badRequest('the run is invalid: send {"prefix": "…", "source": "…"}', { errors: zodErrors(parsed.error) });
  const stream = c.get("stream");
  const where = await coordinatorStub(c.env, stream).locate();
  if (!where) throw notFound(`stream "${stream}" does not exist`);
  const { prefix, source = FILES_SOURCE, ...options } = parsed.data;
  const id = await runnerStub(c.env, stream).start(stream, where.epoch, prefix, source, options);
  return c.json({ id, stream, prefix, source }, 202, { location: `/v1/streams/${stream}/runs/${id}` });
});

runRoutes.get(`${RUNS}/:id`, async (c) => {
  const run = await runnerStub(c.env, c.get("stream")).view(c.req.param("id"));
  if (!run) throw notFound(`no run ${c.req.param("id")} for stream "${c.get("stream")}"`);
  return c.json(run);
});

// How far the committed output is readable outside: /output, the manifest, the table (what a run's done and `edge-dedup send` wait for).
runRoutes.get(PUBLICATION, async (c) => {
  const view = await publicationOf(c.env, c.get("stream"));
  if (!view) throw notFound(`stream "${c.get("stream")}" does not exist`);
  return c.json(view);
});

for (const [path, allow] of [[RUNS, "POST"], [`${RUNS}/:id`, "GET"], [PUBLICATION, "GET"]] as const) {
  runRoutes.all(path, () => {
    throw new HttpError(405, "method-not-allowed", "Method not allowed", `allowed: ${allow}`, {}, { allow });
  });
}

// Test builds only (__FAULTS__, like src/faults.ts): the end-to-end tests put
// input objects into the local INPUT bucket of a running `wrangler dev` with
// PUT /__test/input/{key}, and read what the service wrote to its SINK bucket
// (the Iceberg table, for an independent reader) with GET /__test/sink/{key}
// (admin). A deployed Worker has no such routes.
if (faultsEnabled()) {
  runRoutes.get("/__test/sink/*", async (c) => {
    await requireAdmin(c.req.header("authorization"), c.env);
    const key = decodeURIComponent(new URL(c.req.url).pathname.slice("/__test/sink/".length));
    const obj = await c.env.SINK.get(key);
    return obj ? new Response(obj.body) : c.body(null, 404);
  });
  runRoutes.put("/__test/input/*", async (c) => {
    await requireAdmin(c.req.header("authorization"), c.env);
    const key = decodeURIComponent(new URL(c.req.url).pathname.slice("/__test/input/".length));
    const obj = await c.env.INPUT.put(key, await c.req.arrayBuffer());
    return c.json({ key, etag: obj?.etag }, 201);
  });
}

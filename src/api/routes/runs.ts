import { coordinatorStub, runnerStub } from "../../env";
import { FILES_SOURCE } from "../../sources/files/routes";
import { runBody } from "../../sources/files/run-body";
import { zodErrors } from "../../stream/config";
import { badRequest, notFound } from "../problem";
import { route } from "../route";
import { runSchema, runStartedSchema } from "../schemas";
import { STREAM } from "./shared";

// File runs (DESIGN §7): the work itself is the Runner's (src/sources/files/runner.ts).
const RUNS = `${STREAM}/runs`;

export const startRun = route({
  method: "post", path: RUNS, summary: "Ingest every object under a prefix of the INPUT bucket not ingested yet", tag: "sources", auth: "admin",
  description: "JSON and NDJSON objects; `source` defaults to `files`.",
  request: { body: runBody },
  responses: { 202: { schema: runStartedSchema, description: "{id, stream, prefix, source}", headers: { Location: "the run: GET it for its status" } } },
  handler: async (c) => {
    const parsed = runBody.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) throw badRequest('the run is invalid: send {"prefix": "…", "source": "…"}', { errors: zodErrors(parsed.error) });
    const stream = c.get("stream");
    const where = await coordinatorStub(c.env, stream).locate();
    if (!where) throw notFound(`stream "${stream}" does not exist`);
    const { prefix, source = FILES_SOURCE } = parsed.data;
    const id = await runnerStub(c.env, stream).start(stream, where.epoch, prefix, source);
    return c.json({ id, stream, prefix, source }, 202, { location: `/v1/streams/${stream}/runs/${id}` });
  },
});

export const getRun = route({
  method: "get", path: `${RUNS}/:id`, summary: "A run's status and counts", tag: "sources", auth: "admin",
  description: "Files done, left, skipped and failed, row counts and the first errors.",
  responses: { 200: { schema: runSchema, description: "the run" } },
  handler: async (c) => {
    const run = await runnerStub(c.env, c.get("stream")).view(c.req.param("id")!);
    if (!run) throw notFound(`no run ${c.req.param("id")} for stream "${c.get("stream")}"`);
    return c.json(run);
  },
});

export const routes = [startRun, getRun];

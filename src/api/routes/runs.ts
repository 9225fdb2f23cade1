import { coordinatorStub, runnerStub } from "../../env";
import { publicationOf } from "../../sources/files/publication";
import { FILES_SOURCE } from "../../sources/files/protocol";
import { runBody } from "../../sources/files/run-body";
import { zodErrors } from "../../stream/config";
import { badRequest, notFound } from "../../http/problem";
import { route } from "../route";
import { publicationSchema, runSchema, runStartedSchema } from "../schemas";
import { STREAM } from "./shared";

// File runs (DESIGN §7): the work itself is the Runner's (src/sources/files/runner.ts).
const RUNS = `${STREAM}/runs`;

export const startRun = route({
  method: "post",
  path: RUNS,
  summary: "Ingest every object under a prefix of the INPUT bucket not ingested yet",
  tag: "sources",
  auth: "admin",
  description:
    "`.json` read as Spark reads it (JSON Lines unless the file is one document; `multiLine`), `.ndjson`/`.jsonl`, each optionally `.gz`; `source` defaults to `files`. Done once the manifest and the table hold what it ingested.",
  request: { body: runBody },
  responses: { 202: { schema: runStartedSchema, description: "{id, stream, prefix, source}", headers: { Location: "the run: GET it for its status" } } },
  handler: async (c) => {
    const parsed = runBody.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) throw badRequest('the run is invalid: send {"prefix": "…", "source": "…"}', { errors: zodErrors(parsed.error) });
    const stream = c.get("stream");
    const where = await coordinatorStub(c.env, stream).locate();
    if (!where) throw notFound(`stream "${stream}" does not exist`);
    const { prefix, source = FILES_SOURCE, ...options } = parsed.data;
    const id = await runnerStub(c.env, stream).start(stream, where.epoch, prefix, source, options);
    return c.json({ id, stream, prefix, source }, 202, { location: `/v1/streams/${stream}/runs/${id}` });
  },
});

export const getRun = route({
  method: "get",
  path: `${RUNS}/:id`,
  summary: "A run's status and counts",
  tag: "sources",
  auth: "admin",
  description: "Files done, left, skipped and failed, row counts and the first errors.",
  responses: { 200: { schema: runSchema, description: "the run" } },
  handler: async (c) => {
    const run = await runnerStub(c.env, c.get("stream")).view(c.req.param("id")!);
    if (!run) throw notFound(`no run ${c.req.param("id")} for stream "${c.get("stream")}"`);
    return c.json(run);
  },
});

// How far the committed output is readable outside: /output, the manifest, the table (what a run's done and `edge-dedup send` wait for).
export const publication = route({
  method: "get",
  path: `${STREAM}/publication`,
  summary: "How far the committed output is readable outside",
  tag: "output",
  auth: "admin",
  description:
    "The last commit, and the last commit /output, the committed manifest and the Iceberg table hold: a file run is done, and `edge-dedup send` returns, once all of them hold what it committed.",
  responses: { 200: { schema: publicationSchema, description: "{stream, committed, output, manifest, table, snapshot}" } },
  handler: async (c) => {
    const view = await publicationOf(c.env, c.get("stream"));
    if (!view) throw notFound(`stream "${c.get("stream")}" does not exist`);
    return c.json(view);
  },
});

export const routes = [startRun, getRun, publication];

import { z } from "zod";
import { coordinatorStub, registryStub } from "../../env";
import { MAX_CONFIG_BYTES, parseStreamConfig, streamBodySchema } from "../../stream/config";
import { MAX_SHARDS } from "../../stream/shards";
import { parseJson } from "../../lib/json";
import { readBody } from "../../http/body";
import { badRequest, conflict, HttpError, shardsChanging } from "../../http/problem";
import { route } from "../route";
import { putStreamResultSchema, rescaleSchema, reshardSchema, streamInfoSchema, streamListSchema } from "../schemas";
import { intIn, intQuery, missing, STREAM } from "./shared";

const listQuery = z.object({
  limit: intIn(1, 100).default(100).describe("streams per page"),
  after: z.string().optional().describe("the stream name to list after: the `next` of the previous page"),
});

// The streams, a page at a time, by name; each with its watermark and state size (as last reported).
export const listStreams = route({
  method: "get",
  path: "/v1/streams",
  summary: "The streams by name, with watermark and state size",
  tag: "streams",
  auth: "admin",
  description:
    "Each stream with `createdAt`, `watermark`, `state` (rows, bytes, as the partitions last reported; during a rescale, asked of them, each key once) and its committed batch count.",
  request: { query: listQuery },
  responses: { 200: { schema: streamListSchema, description: "{streams, next}; `next` is null on the last page" } },
  handler: async (c) => {
    const limit = intQuery(c, listQuery, "limit");
    const page = await registryStub(c.env).list(c.req.query("after") ?? "", limit);
    const summaries = await Promise.all(page.map((s) => coordinatorStub(c.env, s.name).summary()));
    // A stream deleted between the two reads is left out.
    const streams = page.flatMap((s, i) => (summaries[i] ? [{ name: s.name, ...summaries[i] }] : []));
    return c.json({ streams, next: page.length === limit ? page[page.length - 1].name : null });
  },
});

export const putStream = route({
  method: "put",
  path: STREAM,
  summary: "Create or update a stream",
  tag: "streams",
  auth: "admin",
  description:
    "The whole config every time: fields left out take their defaults (not a patch). A changed bound field (`key`, `mode`, `eventTime`, `partitions`, `shards`, `stateKeys`, a key column's type) is a 409 `bound-field-changed`; an invalid config a 400; " +
    `a body over ${MAX_CONFIG_BYTES} bytes (${MAX_CONFIG_BYTES / 1024} KiB) a 413 \`body-too-large\`.`,
  request: { body: streamBodySchema },
  responses: {
    201: { schema: putStreamResultSchema, description: "{stream, status, config}; 200 when updated or unchanged (`status` `updated` or `unchanged`)" },
  },
  handler: async (c) => {
    // Bounded before it is parsed: a config is read on every call to the stream's Coordinator.
    const bytes = await readBody(c.req.raw, MAX_CONFIG_BYTES).catch((e: unknown) => {
      throw e instanceof HttpError && e.status === 413 ? configTooLarge() : e;
    });
    const body = parseJson(new TextDecoder().decode(bytes));
    if (!body.ok) throw badRequest(`the body ${body.error}`);
    const parsed = parseStreamConfig(body.value);
    if (!parsed.ok) throw badRequest("the stream config is invalid", { errors: parsed.errors });
    const stream = c.get("stream");
    const r = await coordinatorStub(c.env, stream).configure(stream, parsed.config);
    // Every successful PUT (re-)registers the stream: a failed registration heals on the next one.
    if (r.status !== "conflict") await registryStub(c.env).add(stream);
    if (r.status === "conflict") {
      throw conflict("bound-field-changed", `fields bound at creation cannot change: ${r.changed.join(", ")}; create a new stream instead`, {
        errors: r.changed.map((path) => ({ path, message: "bound at creation" })),
      });
    }
    return c.json({ stream, status: r.status, config: r.config }, r.status === "created" ? 201 : 200);
  },
});

const configTooLarge = () =>
  new HttpError(413, "body-too-large", "Payload too large", `the stream config is larger than ${MAX_CONFIG_BYTES} bytes, the most a config may be`);

const patchBody = z
  .object({
    partitions: z.unknown().optional().describe("the new partition count, 1 to 1024"),
    shards: z.unknown().optional().describe(`the ingest shards that take batches, 1 to ${MAX_SHARDS}`),
  })
  .strict()
  .describe("what to change on the live stream: partitions, or shards (one at a time)");

export const patchStream = route({
  method: "patch",
  path: STREAM,
  summary: "Rescale a live stream's partitions, or change its ingest shards",
  tag: "streams",
  auth: "admin",
  description:
    '`{"partitions": N}`: 202 and the move under way (`GET` shows it as `rescale`); ingest goes on, judged by the new partitions from the first micro-batch after the switch, keys not yet moved read through. A stream of several ingest shards is rescaled the same way (a shard still routing by the old map is fenced and takes the new one). A second PATCH while one runs is a 409 `rescale-under-way`; hashed keys in global mode a 409 `rescale-not-supported`; a bad target a 400. `{"shards": S}`: 202 once every shard routes by S; a batch id that moves to another shard is asked of its old one for the idempotency window, so a retry replays and a reused id is still a 422; another change within the window asks each count\'s shard in turn (at most 4 changes within one window: a fifth is a 409 `rescale-under-way`). Fewer shards than now: the others take no more batches and keep their output (`config.intakeShards`), and a later change may take them up again.',
  request: { body: patchBody },
  responses: { 202: { schema: z.union([rescaleSchema, reshardSchema]), description: "the rescale, started; or the new shard count, in force" } },
  handler: async (c) => {
    const body = parseJson(new TextDecoder().decode(await readBody(c.req.raw, MAX_CONFIG_BYTES)));
    if (!body.ok) throw badRequest(`the body ${body.error}`);
    const parsed = patchBody.safeParse(body.value);
    if (!parsed.success) throw badRequest("the body takes partitions or shards only");
    const { partitions: target, shards } = parsed.data;
    if ((target === undefined) === (shards === undefined)) throw badRequest("the body takes partitions or shards, one at a time");
    if (shards !== undefined && (typeof shards !== "number" || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS))
      throw badRequest(`shards must be an integer from 1 to ${MAX_SHARDS}`);
    if (target !== undefined && (typeof target !== "number" || !Number.isInteger(target) || target < 1 || target > 1024))
      throw badRequest("partitions must be an integer from 1 to 1024");
    const r = await coordinatorStub(c.env, c.get("stream")).rescale(shards !== undefined ? { shards: shards as number } : (target as number));
    if (r.kind === "missing") throw missing(c.get("stream"));
    if (r.kind === "refused") throw r.status === 400 ? badRequest(r.detail) : conflict(r.slug, r.detail);
    if (r.kind === "failed") throw shardsChanging(`the shard change was cut short (${r.detail}): send the PATCH again to finish it`);
    if (r.kind === "resharded") return c.json({ shards: { from: r.from, to: r.to }, state: "done" as const }, 202);
    const { from, to, startedAt, keysMoved, cursors } = r.rescale;
    return c.json({ from: from.partitions, to, state: "moving" as const, keysMoved, startedAt, oldPartitionsLeft: cursors.filter((x) => !x.done).length }, 202);
  },
});

export const getStream = route({
  method: "get",
  path: STREAM,
  summary: "A stream's config, watermark, sources and state",
  tag: "streams",
  auth: "admin",
  description: "With its state size and committed batch count.",
  responses: { 200: { schema: streamInfoSchema, description: "the stream" } },
  handler: async (c) => {
    const d = await coordinatorStub(c.env, c.get("stream")).describe();
    if (!d) throw missing(c.get("stream"));
    return c.json({ stream: c.get("stream"), ...d });
  },
});

export const deleteStream = route({
  method: "delete",
  path: STREAM,
  summary: "Delete a stream: state, ledger, output, table, destinations",
  tag: "streams",
  auth: "admin",
  description:
    "Like deleting a Spark checkpoint. Its destinations go too (pending rows, dead lanes, secrets); a stream created again under the name sends new webhook-ids.",
  responses: { 204: { description: "deleted" } },
  handler: async (c) => {
    const dropped = await coordinatorStub(c.env, c.get("stream")).drop();
    await registryStub(c.env).remove(c.get("stream"));
    if (!dropped) throw missing(c.get("stream"));
    return c.body(null, 204);
  },
});

export const routes = [listStreams, putStream, patchStream, getStream, deleteStream];

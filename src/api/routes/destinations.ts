import { z } from "zod";
import { parseCursor } from "../../stream/shard-cursor";
import { isSharded, seqBase, shardList, shardsOf } from "../../stream/shards";
import { coordinatorStub } from "../../env";
import { zodErrors } from "../../stream/config";
import {
  destinationBodySchema,
  MAX_DESTINATIONS_PER_STREAM,
  replayBodySchema,
  RESERVED_QUEUE_BINDINGS,
  rotateBodySchema,
  toConfig,
} from "../../delivery/config";
import { destinationIndex, destinationStub } from "../../env";
import { forgetNoDestinations } from "../../delivery/poke";
import { parseWebhookId } from "../../delivery/message";
import {
  attemptsListSchema,
  deadLaneSchema,
  destinationListSchema,
  destinationPutSchema,
  destinationSchema,
  replaySchema,
  rotatedSchema,
} from "../../delivery/schemas";
import { checkDestinationUrl } from "../../delivery/url";
import { MAX_SIGNING_SECRETS } from "../../delivery/secrets";
import { badRequest, notFound, tooManyDestinations } from "../../http/problem";
import { sealingKeys } from "../../credentials/sealing";
import { route } from "../route";
import { intIn, intQuery, STREAM } from "./shared";

// Destinations (DESIGN §10): each output row pushed on to the user's handler or a queue; the sending is the Destination object's (src/delivery).
// Admin only, so a URL is only ever set, and fetched, for the admin.
const LIST = `${STREAM}/destinations`;
const ONE = `${LIST}/:name`;

const missing = (stream: string, name: string | undefined) => notFound(`stream "${stream}" has no destination "${name}"`);

export const listDestinations = route({
  method: "get",
  path: LIST,
  summary: "The stream's destinations with their delivery status",
  tag: "delivery",
  auth: "admin",
  responses: { 200: { schema: destinationListSchema, description: "{destinations}" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const names = await destinationIndex(c.env, stream).members();
    const all = await Promise.all(names.map((n) => destinationStub(c.env, stream, n).status()));
    return c.json({ destinations: all.filter((d) => d !== null) });
  },
});

export const putDestination = route({
  method: "put",
  path: ONE,
  summary: "Create or update a destination (http: Standard Webhooks; queue: a Queues producer)",
  tag: "delivery",
  auth: "admin",
  description: `A new destination receives the rows of commits after its creation (replay reaches back). A new http destination answers its \`whsec_\` secret once. A PUT again updates it and resumes a paused one. URLs must be https:// with a public host. A stream has at most ${MAX_DESTINATIONS_PER_STREAM} destinations (409 \`too-many-destinations\`); an http destination needs the CREDENTIALS_KEY secret (503 \`not-configured\`).`,
  request: { body: destinationBodySchema },
  responses: {
    201: { schema: destinationPutSchema, description: "{stream, name, status, secret?, destination}" },
    200: { schema: destinationPutSchema, description: "updated" },
  },
  handler: async (c) => {
    const stream = c.get("stream");
    const name = c.req.param("name")!;
    const parsed = destinationBodySchema.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) {
      throw badRequest('the destination is invalid: send {"type": "http", "url": "https://…"} or {"type": "queue", "binding": "…"}', {
        errors: zodErrors(parsed.error),
      });
    }
    const config = toConfig(parsed.data);
    if (config.type === "http") {
      // Its signing secrets are sealed under CREDENTIALS_KEY: without it, the same 503 as a source's credentials, before anything is stored.
      sealingKeys(c.env);
      const url = checkDestinationUrl(config.url, c.env.ALLOW_LOOPBACK_DESTINATIONS === "true");
      if (!url.ok) throw badRequest(`url: ${url.reason}`, { errors: [{ path: "url", message: url.reason }] });
      config.url = url.url;
    } else {
      const bound = (c.env as unknown as Record<string, { sendBatch?: unknown } | undefined>)[config.binding];
      if (RESERVED_QUEUE_BINDINGS.includes(config.binding) || typeof bound?.sendBatch !== "function") {
        const reason = `${config.binding} is not a Queues producer binding destinations may use (add one in wrangler.toml; EVENTS and DLQ are the service's own)`;
        throw badRequest(`binding: ${reason}`, { errors: [{ path: "binding", message: reason }] });
      }
    }
    const at = await coordinatorStub(c.env, stream).locate();
    if (!at) throw notFound(`stream "${stream}" does not exist`);
    // A new destination starts after every shard's last commit.
    const lastSeqs = isSharded(at.config)
      ? await Promise.all(
          shardList(shardsOf(at.config)).map(async (k) => (k === 0 ? at : await coordinatorStub(c.env, stream, k).locate())?.lastSeq ?? seqBase(k)),
        )
      : [at.lastSeq];
    // Listed first, so that the cap is checked where the names are (atomically) and no destination exists unlisted.
    const index = destinationIndex(c.env, stream);
    const listed = await index.addMember(name, MAX_DESTINATIONS_PER_STREAM);
    if (listed === "full") {
      throw tooManyDestinations(`stream "${stream}" has ${MAX_DESTINATIONS_PER_STREAM} destinations, the most it may have; delete one first`);
    }
    const dest = destinationStub(c.env, stream, name);
    let r;
    try {
      r = await dest.configure(stream, name, config, { epoch: at.epoch, incarnation: at.incarnation, lastSeqs });
    } catch (e) {
      if (listed === "added") await index.removeMember(name).catch(() => undefined);
      throw e;
    }
    forgetNoDestinations(stream);
    const destination = (await dest.status())!;
    return c.json({ stream, name, status: r.status, ...(r.secret ? { secret: r.secret } : {}), destination }, r.status === "created" ? 201 : 200);
  },
});

export const getDestination = route({
  method: "get",
  path: ONE,
  summary: "A destination: deliveredSeq, pending, failing, lastError, lastSuccessAt, lagMs",
  tag: "delivery",
  auth: "admin",
  responses: { 200: { schema: destinationSchema, description: "the destination" } },
  handler: async (c) => {
    const d = await destinationStub(c.env, c.get("stream"), c.req.param("name")!).status();
    if (!d) throw missing(c.get("stream"), c.req.param("name"));
    return c.json(d);
  },
});

export const deleteDestination = route({
  method: "delete",
  path: ONE,
  summary: "Stop and forget a destination",
  tag: "delivery",
  auth: "admin",
  responses: { 204: { description: "deleted" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const name = c.req.param("name")!;
    const removed = await destinationStub(c.env, stream, name).remove();
    await destinationIndex(c.env, stream).removeMember(name);
    if (!removed) throw missing(stream, name);
    return c.body(null, 204);
  },
});

const deadQuery = z.object({
  limit: intIn(1, 1000).default(100).describe("rows per page"),
  after: z
    .string()
    .regex(/^\d+\.-?\d+$/)
    .optional()
    .describe("<seq>.<index>: the `next` of the previous page"),
});

export const deadLane = route({
  method: "get",
  path: `${ONE}/dead`,
  summary: "The dead lane: rows whose retryFor ran out",
  tag: "delivery",
  auth: "admin",
  request: { query: deadQuery },
  responses: { 200: { schema: deadLaneSchema, description: "{rows, next}" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const name = c.req.param("name")!;
    const limit = intQuery(c, deadQuery, "limit");
    const after = /^(\d+)\.(-?\d+)$/.exec(c.req.query("after") || "0.-1");
    if (!after) throw badRequest("after must be <seq>.<index>: the `next` of the previous page");
    const dest = destinationStub(c.env, stream, name);
    const [status, rows] = await Promise.all([dest.status(), dest.dead({ seq: Number(after[1]), index: Number(after[2]) }, limit)]);
    if (!status) throw missing(stream, name);
    const last = rows[rows.length - 1];
    return c.json({
      rows: rows.map((r) => ({ ...r, row: JSON.parse(r.row) as unknown })),
      next: rows.length === limit && last ? `${last.seq}.${last.index}` : null,
    });
  },
});

const attemptsQuery = z.object({
  id: z.string().optional().describe("a webhook-id: that row's attempts (without it: the rows worth a look, failing ones first)"),
  limit: intIn(1, 100).default(20).describe("rows, without id"),
});

export const attempts = route({
  method: "get",
  path: `${ONE}/attempts`,
  summary: "A row's last attempts by its webhook-id, or the failing, dead and recently delivered rows'",
  tag: "delivery",
  auth: "admin",
  description:
    "Each attempt: when it started, how long it took, the status, and the error (never the row's bytes). Kept for pending and dead rows and for the last 1,000 delivered; older delivered rows answer 404.",
  request: { query: attemptsQuery },
  responses: { 200: { schema: attemptsListSchema, description: "{rows}" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const name = c.req.param("name")!;
    const id = c.req.query("id");
    const place = id === undefined ? null : parseWebhookId(stream, id);
    if (id !== undefined && !place) throw badRequest(`id must be one of this stream's webhook-ids, ${stream}.{seq}.{index} or ${stream}~{n}.{seq}.{index}`);
    // One call: the destination answers null when it does not exist.
    const rows = await destinationStub(c.env, stream, name).attempts(place ?? { limit: intQuery(c, attemptsQuery, "limit") });
    if (!rows) throw missing(stream, name);
    // An id of an earlier creation of the stream's name names rows this destination never had.
    if (id !== undefined && rows[0]?.id !== id) throw notFound(`destination "${name}" keeps no attempts of ${id} (not a row it has, or delivered long ago)`);
    return c.json({ rows });
  },
});

export const replay = route({
  method: "post",
  path: `${ONE}/replay`,
  summary: "Send every row from a commit seq on again (dead ones included), with the same ids",
  tag: "delivery",
  auth: "admin",
  request: { body: replayBodySchema },
  responses: { 202: { schema: replaySchema, description: "{fromSeq, fromDead}" } },
  handler: async (c) => {
    const parsed = replayBodySchema.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) {
      throw badRequest(
        'send {"fromSeq": <the first commit seq to send again>}, {"from": "dead"} or {"after": "<a cursor: every commit after it, in every shard>"}',
        {
          errors: zodErrors(parsed.error),
        },
      );
    }
    let from: number[] | "dead";
    if ("fromSeq" in parsed.data) from = [parsed.data.fromSeq];
    else if ("from" in parsed.data) from = "dead";
    else {
      const at = await coordinatorStub(c.env, c.get("stream")).locate();
      if (!at) throw missing(c.get("stream"), c.req.param("name"));
      const cursor = parseCursor(parsed.data.after, shardsOf(at.config));
      if (!cursor.ok) throw badRequest(cursor.detail, { errors: [{ path: "after", message: cursor.detail }] });
      from = cursor.after.map((seq) => seq + 1);
    }
    const r = await destinationStub(c.env, c.get("stream"), c.req.param("name")!).replay(from);
    if (!r) throw missing(c.get("stream"), c.req.param("name"));
    const { fromSeqs, fromDead } = r;
    return c.json({ ...(fromSeqs.length > 0 ? { fromSeq: fromSeqs[0] } : {}), ...(fromSeqs.length > 1 ? { fromSeqs } : {}), fromDead }, 202);
  },
});

export const rotateSecret = route({
  method: "post",
  path: `${ONE}/rotate-secret`,
  summary: "A new signing secret; the old one keeps signing during the overlap",
  tag: "delivery",
  auth: "admin",
  description: `At most ${MAX_SIGNING_SECRETS} secrets sign at once (the current one and the previous ones within their overlap): past that, the oldest stops signing at once. Needs the CREDENTIALS_KEY secret (503 \`not-configured\`).`,
  request: { body: rotateBodySchema },
  responses: { 201: { schema: rotatedSchema, description: "{id, secret}, shown once" } },
  handler: async (c) => {
    const text = await c.req.text();
    const parsed = rotateBodySchema.safeParse(text.trim() === "" ? undefined : safeJson(text));
    if (!parsed.success) throw badRequest('send {} or {"overlap": "24 hours"}', { errors: zodErrors(parsed.error) });
    sealingKeys(c.env); // the new secret is sealed under CREDENTIALS_KEY: a 503 that says so, not a 500
    const r = await destinationStub(c.env, c.get("stream"), c.req.param("name")!).rotateSecret(parsed.data.overlap);
    if (!r) throw notFound(`stream "${c.get("stream")}" has no http destination "${c.req.param("name")}"`);
    return c.json(r, 201);
  },
});

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return Symbol("invalid");
  }
}

export const routes = [listDestinations, putDestination, getDestination, deleteDestination, deadLane, attempts, replay, rotateSecret];

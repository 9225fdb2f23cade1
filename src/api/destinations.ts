import { Hono } from "hono";
import { coordinatorStub, type Env } from "../env";
import { NAME_PATTERN, zodErrors } from "../stream/config";
import { destinationBodySchema, replayBodySchema, RESERVED_QUEUE_BINDINGS, rotateBodySchema, toConfig } from "../delivery/config";
import { destinationIndex, destinationStub } from "../delivery/destination";
import { forgetNoDestinations } from "../delivery/poke";
import { checkDestinationUrl } from "../delivery/url";
import { badRequest, HttpError, notFound } from "./problem";

export * from "../delivery/schemas";

/**
 * Destinations (DESIGN §10): PUT/GET/DELETE /v1/streams/{stream}/destinations/{name},
 * its dead lane, replay and secret rotation, and the list. Admin only (the
 * app's /v1 middleware checks the token and the stream name), so a URL is
 * only ever set, and fetched, for the admin. Mounted by src/api/app.ts; the
 * sending is the Destination object's (src/delivery).
 */
export const destinationRoutes = new Hono<{ Bindings: Env; Variables: { stream: string } }>();

const LIST = "/v1/streams/:stream/destinations";
const ONE = `${LIST}/:name`;

// ---- routes ----

destinationRoutes.get(LIST, async (c) => {
  const stream = c.get("stream");
  const names = await destinationIndex(c.env, stream).members();
  const all = await Promise.all(names.map((n) => destinationStub(c.env, stream, n).status()));
  return c.json({ destinations: all.filter((d) => d !== null) });
});

destinationRoutes.put(ONE, async (c) => {
  const stream = c.get("stream");
  const name = destinationName(c.req.param("name"));
  const parsed = destinationBodySchema.safeParse(await c.req.json().catch(() => undefined));
  if (!parsed.success) {
    throw badRequest('the destination is invalid: send {"type": "http", "url": "https://…"} or {"type": "queue", "binding": "…"}', { errors: zodErrors(parsed.error) });
  }
  const config = toConfig(parsed.data);
  if (config.type === "http") {
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
  const dest = destinationStub(c.env, stream, name);
  const r = await dest.configure(stream, name, config, { epoch: at.epoch, lastSeq: at.lastSeq });
  await destinationIndex(c.env, stream).addMember(name);
  forgetNoDestinations(stream);
  const destination = await dest.status();
  return c.json({ stream, name, status: r.status, ...(r.secret ? { secret: r.secret } : {}), destination }, r.status === "created" ? 201 : 200);
});

destinationRoutes.get(ONE, async (c) => {
  const d = await destinationStub(c.env, c.get("stream"), destinationName(c.req.param("name"))).status();
  if (!d) throw missing(c.get("stream"), c.req.param("name"));
  return c.json(d);
});

destinationRoutes.delete(ONE, async (c) => {
  const stream = c.get("stream");
  const name = destinationName(c.req.param("name"));
  const removed = await destinationStub(c.env, stream, name).remove();
  await destinationIndex(c.env, stream).removeMember(name);
  if (!removed) throw missing(stream, name);
  return c.body(null, 204);
});

destinationRoutes.get(`${ONE}/dead`, async (c) => {
  const stream = c.get("stream");
  const name = destinationName(c.req.param("name"));
  const limit = Number(c.req.query("limit") ?? 100);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest("limit must be a whole number in 1..1000");
  const after = /^(\d+)\.(\d+)$/.exec(c.req.query("after") ?? "0.-1") ?? (c.req.query("after") ? null : ["", "0", "-1"]);
  if (!after) throw badRequest("after must be <seq>.<index>: the `next` of the previous page");
  const dest = destinationStub(c.env, stream, name);
  const [status, rows] = await Promise.all([dest.status(), dest.dead({ seq: Number(after[1]), index: Number(after[2]) }, limit)]);
  if (!status) throw missing(stream, name);
  const last = rows[rows.length - 1];
  return c.json({ rows: rows.map((r) => ({ ...r, row: JSON.parse(r.row) as unknown })), next: rows.length === limit && last ? `${last.seq}.${last.index}` : null });
});

destinationRoutes.post(`${ONE}/replay`, async (c) => {
  const parsed = replayBodySchema.safeParse(await c.req.json().catch(() => undefined));
  if (!parsed.success) throw badRequest('send {"fromSeq": <the first commit seq to send again>}', { errors: zodErrors(parsed.error) });
  const r = await destinationStub(c.env, c.get("stream"), destinationName(c.req.param("name"))).replay(parsed.data.fromSeq);
  if (!r) throw missing(c.get("stream"), c.req.param("name"));
  return c.json(r, 202);
});

destinationRoutes.post(`${ONE}/rotate-secret`, async (c) => {
  const text = await c.req.text();
  const parsed = rotateBodySchema.safeParse(text.trim() === "" ? undefined : safeJson(text));
  if (!parsed.success) throw badRequest('send {} or {"overlap": "24 hours"}', { errors: zodErrors(parsed.error) });
  const dest = destinationStub(c.env, c.get("stream"), destinationName(c.req.param("name")));
  const r = await dest.rotateSecret(parsed.data.overlap);
  if (!r) throw notFound(`stream "${c.get("stream")}" has no http destination "${c.req.param("name")}"`);
  return c.json(r, 201);
});

for (const [path, allow] of [[LIST, "GET"], [ONE, "GET, PUT, DELETE"], [`${ONE}/dead`, "GET"], [`${ONE}/replay`, "POST"], [`${ONE}/rotate-secret`, "POST"]] as const) {
  destinationRoutes.all(path, () => {
    throw new HttpError(405, "method-not-allowed", "Method not allowed", `allowed: ${allow}`, {}, { allow });
  });
}

function destinationName(name: string | undefined): string {
  if (!name || !NAME_PATTERN.test(name)) throw badRequest(`destination name "${name}" is invalid: 1-64 characters, letters, digits, '_', '.', '-'`);
  return name;
}

const missing = (stream: string, name: string | undefined) => notFound(`stream "${stream}" has no destination "${name}"`);

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return Symbol("invalid");
  }
}

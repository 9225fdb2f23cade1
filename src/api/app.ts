import { Hono, type Context } from "hono";
import { NAME_PATTERN, parseStreamConfig } from "../stream/config";
import { coordinatorStub, partitionStub, type Env } from "../env";
import { InjectedFault } from "../faults";
import { readObject } from "../sink";
import { requireAdmin } from "./auth";
import { ingest } from "./ingest";
import { badRequest, conflict, HttpError, notFound, problemResponse } from "./problem";

type App = { Bindings: Env; Variables: { stream: string } };

export const app = new Hono<App>();

const STREAM = "/v1/streams/:stream";

app.onError((err, c) => {
  if (err instanceof HttpError) return problemResponse(err, new URL(c.req.url).pathname);
  if (err instanceof InjectedFault || (err as { point?: unknown }).point) console.warn(`test fault: ${err.message}`);
  else console.error("unhandled", err);
  return problemResponse(
    new HttpError(500, "internal", "Internal error", "the request failed; it is safe to retry with the same Idempotency-Key"),
    new URL(c.req.url).pathname,
  );
});

app.notFound((c) => problemResponse(notFound(`no route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

// Every /v1 call: a valid stream name, then auth (ingest too, until per-source credentials exist).
app.use(`${STREAM}/*`, streamName);
app.use(STREAM, streamName);
app.use("/v1/*", async (c, next) => {
  await requireAdmin(c.req.header("authorization"), c.env.ADMIN_TOKEN);
  await next();
});

async function streamName(c: Context<App>, next: () => Promise<void>) {
  const stream = c.req.param("stream") ?? "";
  if (!NAME_PATTERN.test(stream)) {
    throw badRequest(`stream name "${stream}" is invalid: 1-64 characters, letters, digits, '_', '.', '-', starting with a letter or digit`);
  }
  c.set("stream", stream);
  await next();
}

app.put(STREAM, async (c) => {
  const body = await c.req.json().catch(() => {
    throw badRequest("the body is not valid JSON");
  });
  const parsed = parseStreamConfig(body);
  if (!parsed.ok) throw badRequest("the stream config is invalid", { errors: parsed.errors });
  const stream = c.get("stream");
  const r = await coordinatorStub(c.env, stream).configure(stream, parsed.config);
  if (r.status === "conflict") {
    throw conflict("bound-field-changed", `fields bound at creation cannot change: ${r.changed.join(", ")}; create a new stream instead`, {
      errors: r.changed.map((path) => ({ path, message: "bound at creation" })),
    });
  }
  return c.json({ stream, status: r.status, config: r.config }, r.status === "created" ? 201 : 200);
});

app.get(STREAM, async (c) => {
  const d = await coordinatorStub(c.env, c.get("stream")).describe();
  if (!d) throw missing(c.get("stream"));
  return c.json({ stream: c.get("stream"), ...d });
});

app.delete(STREAM, async (c) => {
  const dropped = await coordinatorStub(c.env, c.get("stream")).drop();
  if (!dropped) throw missing(c.get("stream"));
  return c.body(null, 204);
});

app.post(`${STREAM}/events`, async (c) => {
  const { outcome, batchId } = await ingest(c.env, c.get("stream"), c.req.raw);
  return c.json(outcome, 200, { "idempotency-key": batchId });
});

app.get(`${STREAM}/progress`, async (c) => {
  const limit = intParam(c.req.query("limit"), "limit", 100, 1, 1000);
  const coordinator = coordinatorStub(c.env, c.get("stream"));
  if (!(await coordinator.locate())) throw missing(c.get("stream"));
  return c.json({ progress: await coordinator.progress(limit) });
});

app.get(`${STREAM}/state`, async (c) => {
  const where = await coordinatorStub(c.env, c.get("stream")).locate();
  if (!where) throw missing(c.get("stream"));
  const partition = intParam(c.req.query("partition"), "partition", NaN, 0, where.partitions - 1);
  if (Number.isNaN(partition)) throw badRequest(`partition is required: 0..${where.partitions - 1}`);
  const limit = intParam(c.req.query("limit"), "limit", 1000, 1, 10_000);
  const after = c.req.query("after") ?? "";
  const stub = partitionStub(c.env, where.name, partition);
  const [stats, keys] = await Promise.all([stub.describe(where.epoch), stub.list(where.epoch, after, limit)]);
  return c.json({ partition, watermark: stats.watermark, rows: stats.rows, bytes: stats.bytes, keys });
});

// The committed output (and the late and rejected lanes) as NDJSON, batch after
// batch in commit order; pages of the commit index keep memory flat.
for (const [path, lane] of [["output", "data"], ["late", "late"], ["rejected", "rejected"]] as const) {
  app.get(`${STREAM}/${path}`, async (c) => {
    const coordinator = coordinatorStub(c.env, c.get("stream"));
    if (!(await coordinator.locate())) throw missing(c.get("stream"));
    let after = intParam(c.req.query("after"), "after", 0, 0, Number.MAX_SAFE_INTEGER);
    const bucket = c.env.SINK;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const page = await coordinator.commits(lane, after, 100);
        if (page.length === 0) return controller.close();
        for (const { seq, key } of page) {
          const obj = await readObject(bucket, key);
          if (!obj) return controller.error(new Error(`object ${key} of commit ${seq} is missing`));
          const reader = obj.getReader();
          for (let r = await reader.read(); !r.done; r = await reader.read()) controller.enqueue(r.value);
          after = seq;
        }
      },
    });
    return new Response(body, { headers: { "content-type": "application/x-ndjson; charset=utf-8" } });
  });
}

// A known path with the wrong method is a 405 that says what is allowed.
for (const [path, allow] of [
  [STREAM, "GET, PUT, DELETE"],
  [`${STREAM}/events`, "POST"],
  [`${STREAM}/progress`, "GET"],
  [`${STREAM}/state`, "GET"],
  [`${STREAM}/output`, "GET"],
  [`${STREAM}/late`, "GET"],
  [`${STREAM}/rejected`, "GET"],
] as const) {
  app.all(path, () => {
    throw new HttpError(405, "method-not-allowed", "Method not allowed", `allowed: ${allow}`, {}, { allow });
  });
}

function missing(stream: string): HttpError {
  return notFound(`stream "${stream}" does not exist`);
}

function intParam(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw badRequest(`${name} must be a whole number in ${min}..${max}`);
  return n;
}

import { Hono, type Context } from "hono";
import { cors } from "hono/cors";
import { NAME_PATTERN, parseStreamConfig, zodErrors, type StreamConfig } from "../stream/config";
import { locateRow } from "../stream/batch";
import { coordinatorStub, partitionStub, registryStub, type Env } from "../env";
import { DEFAULT_THRESHOLDS, evaluateHealth, type HealthSource } from "../stream/health";
import { renderPrometheus, type StreamMetrics } from "../stream/metrics";
import { watermarkSources } from "../stream/watermark";
import { InjectedFault } from "../faults";
import { committedPages, readParts } from "../output-reader";
import { docsPage, openApiDocument } from "./openapi";
import { r2Store, readTableSnapshot } from "../table";
import { requireAdmin } from "./auth";
import { credentialBody, hashToken, newSecret, type StoredCredential } from "./credentials";
import { sealSecret } from "./sealing";
import { ingest } from "./ingest";
import { webhook } from "./webhook";
import { runRoutes } from "../sources/files/routes";
import { badRequest, conflict, HttpError, notFound, problemResponse } from "./problem";
import { dashboardResponse } from "../dashboard/page";

type App = { Bindings: Env; Variables: { stream: string } };

export const app = new Hono<App>();

const STREAM = "/v1/streams/:stream";
const WEBHOOK = `${STREAM}/sources/:source/webhook`;

app.onError((err, c) => {
  if (err instanceof HttpError) return problemResponse(err, new URL(c.req.url).pathname);
  // A fault injected in a Durable Object arrives here as a plain Error (RPC keeps the message only).
  if (err instanceof InjectedFault || /^injected fault at /.test(err.message)) console.warn(`test fault: ${err.message}`);
  else console.error("unhandled", err);
  return problemResponse(
    new HttpError(500, "internal", "Internal error", "the request failed; it is safe to retry with the same Idempotency-Key"),
    new URL(c.req.url).pathname,
  );
});

// No CORS unless CORS_ORIGINS names the browser origins that may call.
app.use("*", async (c, next) => {
  const origins = (c.env.CORS_ORIGINS ?? "").split(",").map((o) => o.trim()).filter(Boolean);
  if (origins.length === 0) return next();
  return cors({
    origin: origins,
    allowHeaders: ["authorization", "content-type", "idempotency-key", "x-source", "x-signature"],
    exposeHeaders: ["idempotency-key", "retry-after"],
    maxAge: 600,
  })(c, next);
});

app.notFound((c) => problemResponse(notFound(`no route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

// Every /v1 call: a valid stream name, then the admin token — except ingest,
// which also takes a source's credential (checked in ingest()), and webhooks,
// which take a provider's signature (checked in webhook()).
app.use(`${STREAM}/*`, streamName);
app.use(STREAM, streamName);
app.use("/v1/*", async (c, next) => {
  const isIngest = c.req.method === "POST" && /^\/v1\/streams\/[^/]+\/(events|sources\/[^/]+\/webhook)$/.test(c.req.path);
  if (!isIngest) await requireAdmin(c.req.header("authorization"), c.env);
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
  // Every successful PUT (re-)registers the stream: a failed registration heals on the next one.
  if (r.status !== "conflict") await registryStub(c.env).add(stream);
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
  await registryStub(c.env).remove(c.get("stream"));
  if (!dropped) throw missing(c.get("stream"));
  return c.body(null, 204);
});

app.post(`${STREAM}/events`, async (c) => {
  const { outcome, batchId, headers } = await ingest(c.env, c.get("stream"), c.req.raw);
  return c.json(outcome, 200, { ...headers, "idempotency-key": batchId });
});

app.post(WEBHOOK, sourceParam, async (c) => {
  const { outcome, batchId } = await webhook(c.env, c.get("stream"), c.req.param("source")!, c.req.raw);
  return c.json(outcome, 200, { "idempotency-key": batchId });
});

// File runs (DESIGN §7): POST/GET …/runs, in src/sources/files.
app.route("/", runRoutes);

app.get(`${STREAM}/progress`, async (c) => {
  const limit = intParam(c.req.query("limit"), "limit", 100, 1, 1000);
  const coordinator = coordinatorStub(c.env, c.get("stream"));
  if (!(await coordinator.locate())) throw missing(c.get("stream"));
  return c.json({ progress: await coordinator.progress(limit) });
});

app.get(`${STREAM}/state`, async (c) => {
  const where = await coordinatorStub(c.env, c.get("stream")).locate();
  if (!where) throw missing(c.get("stream"));
  const given = intParam(c.req.query("partition"), "partition", NaN, 0, where.partitions - 1);
  // ?row=: is this row's key remembered? Keyed and routed exactly as ingest does (a hashed stream's only way to ask by key).
  const probe = c.req.query("row") === undefined ? null : stateKeyOfRow(where.config, c.req.query("row")!);
  const partition = probe ? probe.partition : given;
  if (Number.isNaN(partition)) throw badRequest(`partition is required: 0..${where.partitions - 1}`);
  if (probe && !Number.isNaN(given) && given !== probe.partition) throw badRequest(`the row's key is in partition ${probe.partition}, not ${given}`);
  const limit = intParam(c.req.query("limit"), "limit", 1000, 1, 10_000);
  const after = c.req.query("after") ?? "";
  const stub = partitionStub(c.env, where.name, partition);
  const [stats, keys] = await Promise.all([stub.describe(where.epoch), probe ? stub.lookup(where.epoch, probe.stateKey) : stub.list(where.epoch, after, limit)]);
  return c.json({ partition, watermark: stats.watermark, rows: stats.rows, bytes: stats.bytes, keys });
});

/** A row given to the state reader: its state key and partition, or a 400 saying why it has none. */
function stateKeyOfRow(config: StreamConfig, text: string): { stateKey: string; partition: number } {
  let row: unknown;
  try {
    row = JSON.parse(text);
  } catch {
    throw badRequest("row must be a JSON object: a row as ingest takes it, with its key columns and event time");
  }
  const where = locateRow(config, row, Date.now());
  if ("error" in where) throw badRequest(`row has no state key: ${where.error}`);
  return where;
}

// Per-source ingest credentials (credentialBody in ./credentials), shown once at creation and never again.
const CREDENTIALS = `${STREAM}/sources/:source/credentials`;

async function sourceParam(c: Context<App>, next: () => Promise<void>) {
  if (!NAME_PATTERN.test(c.req.param("source") ?? "")) throw badRequest("source name is invalid: 1-64 characters, letters, digits, '_', '.', '-'");
  await next();
}
app.use(CREDENTIALS, sourceParam);
app.use(`${CREDENTIALS}/*`, sourceParam);

app.post(CREDENTIALS, async (c) => {
  const parsed = credentialBody.safeParse(await c.req.json().catch(() => undefined));
  if (!parsed.success) throw badRequest("the credential is invalid", { errors: zodErrors(parsed.error) });
  const { type, label } = parsed.data;
  const secret = parsed.data.secret ?? newSecret(type === "token" ? "token" : "hmac");
  const stream = c.get("stream");
  const source = c.req.param("source")!;
  const id = `cred_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const cred: StoredCredential = {
    id,
    source,
    type,
    label: label ?? null,
    createdAt: Date.now(),
    material: type === "token" ? await hashToken(secret) : await sealSecret(secret, c.env, { stream, source, id }),
  };
  const added = await coordinatorStub(c.env, stream).addCredential(cred);
  if (added === "missing") throw missing(stream);
  if (added === "duplicate") throw conflict("credential-in-use", "this token is already a credential of this stream; choose another (or omit secret to get a generated one)");
  if (added === "other-provider") {
    throw conflict("credential-provider-mismatch",
      `source "${source}" already verifies another provider's webhooks; a source's webhook credentials are all of one provider: use another source for ${type}`);
  }
  const { material: _m, ...shown } = cred;
  return c.json({ ...shown, secret }, 201);
});

app.get(CREDENTIALS, async (c) => {
  const coordinator = coordinatorStub(c.env, c.get("stream"));
  if (!(await coordinator.locate())) throw missing(c.get("stream"));
  const list = await coordinator.credentials(c.req.param("source")!);
  return c.json({ credentials: list.map(({ material: _m, ...shown }) => shown) });
});

app.delete(`${CREDENTIALS}/:id`, async (c) => {
  const deleted = await coordinatorStub(c.env, c.get("stream")).deleteCredential(c.req.param("source")!, c.req.param("id")!);
  if (!deleted) throw notFound(`no credential ${c.req.param("id")} for source ${c.req.param("source")}`);
  return c.body(null, 204);
});

// The committed output (and the late and rejected lanes) as NDJSON, batch after
// batch in commit order; pages of the commit index keep memory flat.
for (const [path, lane] of [["output", "data"], ["late", "late"], ["rejected", "rejected"]] as const) {
  app.get(`${STREAM}/${path}`, async (c) => {
    const coordinator = coordinatorStub(c.env, c.get("stream"));
    const where = await coordinator.locate();
    if (!where) throw missing(c.get("stream"));
    const after = intParam(c.req.query("after"), "after", 0, 0, Number.MAX_SAFE_INTEGER);
    const bucket = c.env.SINK;
    // A snapshot: commits up to the last one now; X-Commit-Seq tells the reader where to resume.
    const upTo = where.lastSeq;
    // Commits the ledger has forgotten are read from the committed manifest (src/output-reader.ts).
    const pages = committedPages(bucket, where, lane, after, upTo, (a, u, l) => coordinator.commits(lane, a, u, l));
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const page = await pages.next();
        if (page.done) return controller.close();
        for await (const bytes of readParts(bucket, page.value)) controller.enqueue(bytes);
      },
    });
    return new Response(body, { headers: { "content-type": "application/x-ndjson; charset=utf-8", "x-commit-seq": String(upTo) } });
  });
}

// The Iceberg table's current snapshot, as Iceberg writes it, and where its metadata is.
app.get(`${STREAM}/table`, async (c) => {
  const stream = c.get("stream");
  const d = await coordinatorStub(c.env, stream).describe();
  if (!d) throw missing(stream);
  if (!d.config.table) throw notFound(`stream "${stream}" has no table; set "table": {"format": "iceberg"} in its config`);
  const current = await readTableSnapshot(r2Store(c.env.SINK), stream);
  if (!current) throw notFound(`the table of stream "${stream}" has no snapshot yet: committed output is appended within seconds`);
  return c.json({ stream, metadataLocation: current.metadataLocation, snapshot: current.snapshot });
});

// The contract (src/api/openapi.ts): no credential, no data.
app.get("/openapi.json", (c) => c.json(openApiDocument()));
app.get("/docs", (c) => c.html(docsPage()));

// Operating it (README, Operating it). Liveness of the Worker and its bindings: no auth, no details.
app.get("/healthz", async (c) => {
  try {
    await Promise.all([registryStub(c.env).ping(), c.env.SINK.head("healthz/absent")]);
  } catch (e) {
    console.error("healthz", e instanceof Error ? e.message : String(e));
    return problemResponse(new HttpError(503, "unavailable", "Service unavailable", "the service is not available"), "/healthz");
  }
  return c.json({ status: "ok" }, 200, { "cache-control": "no-store" });
});

// The streams, a page at a time, by name; each with its watermark and state size (as last reported).
app.get("/v1/streams", async (c) => {
  const limit = intParam(c.req.query("limit"), "limit", 100, 1, 100);
  const page = await registryStub(c.env).list(c.req.query("after") ?? "", limit);
  const summaries = await Promise.all(page.map((s) => coordinatorStub(c.env, s.name).summary()));
  // A stream deleted between the two reads is left out.
  const streams = page.flatMap((s, i) => (summaries[i] ? [{ name: s.name, ...summaries[i] }] : []));
  return c.json({ streams, next: page.length === limit ? page[page.length - 1].name : null });
});

app.get(`${STREAM}/health`, async (c) => {
  const stream = c.get("stream");
  const coordinator = coordinatorStub(c.env, stream);
  const [d, progress] = await Promise.all([coordinator.describe(), coordinator.progress(DEFAULT_THRESHOLDS.windowBatches)]);
  if (!d) throw missing(stream);
  const counted = new Set(watermarkSources(d.config, d.sources));
  const sources: Record<string, HealthSource> = {};
  for (const [name, s] of Object.entries(d.sources)) {
    sources[name] = { watermark: s.watermark, lastBatchAt: s.lastBatchAt, idle: s.idle, counted: counted.has(name) && !s.idle };
  }
  const health = evaluateHealth({
    now: Date.now(),
    mode: d.config.mode,
    policy: d.config.watermarkPolicy,
    delay: d.config.watermarkDelay,
    hasEventTime: d.config.eventTime !== null,
    watermark: d.watermark,
    sources,
    progress,
  });
  return c.json({ stream, ...health, state: d.state });
});

// The delay advisor's figures, live (src/stream/advisor/live.ts): what `edge-dedup advise` says of a history, over what this stream received.
app.get(`${STREAM}/advice`, async (c) => {
  const stream = c.get("stream");
  const advice = await coordinatorStub(c.env, stream).advice();
  if (!advice) throw missing(stream);
  return c.json({ stream, ...advice });
});

// The operator's dashboard (src/dashboard): a static page, no data and so no auth; it calls /v1 with the admin token typed into it.
app.get("/dashboard", () => dashboardResponse());

// Prometheus text exposition of every registered stream's counters and gauges.
app.get("/metrics", async (c) => {
  await requireAdmin(c.req.header("authorization"), c.env);
  const figures: StreamMetrics[] = [];
  for (let after = ""; ; ) {
    const page = await registryStub(c.env).list(after, METRICS_PAGE);
    const got = await Promise.all(page.map(async (s) => (await coordinatorStub(c.env, s.name).metrics()) as StreamMetrics | null));
    for (const m of got) if (m) figures.push(m);
    if (page.length < METRICS_PAGE) break;
    after = page[page.length - 1].name;
  }
  return c.body(renderPrometheus(figures), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" });
});

/** Streams asked at once for /metrics. */
const METRICS_PAGE = 50;

// A known path with the wrong method is a 405 that says what is allowed.
for (const [path, allow] of [
  [STREAM, "GET, PUT, DELETE"],
  [`${STREAM}/events`, "POST"],
  [`${STREAM}/progress`, "GET"],
  [`${STREAM}/state`, "GET"],
  [`${STREAM}/output`, "GET"],
  [CREDENTIALS, "GET, POST"],
  [`${CREDENTIALS}/:id`, "DELETE"],
  [WEBHOOK, "POST"],
  [`${STREAM}/late`, "GET"],
  [`${STREAM}/rejected`, "GET"],
  [`${STREAM}/table`, "GET"],
  [`${STREAM}/health`, "GET"],
  [`${STREAM}/advice`, "GET"],
  ["/v1/streams", "GET"],
  ["/healthz", "GET"],
  ["/metrics", "GET"],
  ["/dashboard", "GET"],
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

/**
 * "Echo through a durable write" for `npm run bench` (bench/echo-sql/wrangler.toml,
 * never deployed): echo-do (bench/echo-do/worker.ts) whose Durable Object, one
 * per stream, runs ONE statement per request before it answers,
 * `INSERT OR IGNORE INTO ids … RETURNING id`, and counts what was new. It
 * answers only once that write is durable (the runtime's output gate), as
 * anything that acknowledges an event must.
 *
 * It is the floor of a Worker that makes each request durable, and the
 * simplest deduplication a user could write on Durable Objects (a Redis
 * `SET NX` script's twin): no watermark and no eviction (its ids are kept
 * forever), no batch ids (a retried request counts its rows as duplicates),
 * no output, no partitions. bench/run.ts reads it beside echo and echo-do so
 * that edge-dedup's distance from echo splits into what any durable answer
 * costs here and what edge-dedup's own work costs.
 *
 * GET /v1/streams/{stream}/state → {rows, bytes}.
 */
import { DurableObject } from "cloudflare:workers";

const TOKEN = "bench-token";

type Answer = { input: number; emitted: number; duplicates: number; late: number; rejected: { index: number; error: string }[] };

interface StreamStub {
  insert(ids: string): Promise<number>;
  stats(): Promise<{ rows: number; bytes: number }>;
}
interface Env {
  STREAM: { getByName(name: string): StreamStub };
}

export class Stream extends DurableObject<Env> {
  constructor(ctx: unknown, env: Env) {
    super(ctx, env);
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS ids (id TEXT PRIMARY KEY) WITHOUT ROWID");
  }

  /** `ids`: a JSON array of the rows' ids (as JSON text); returns how many were new. */
  insert(ids: string): number {
    return this.ctx.storage.sql.exec("INSERT OR IGNORE INTO ids (id) SELECT value FROM json_each(?) RETURNING id", ids).toArray().length;
  }

  stats(): { rows: number; bytes: number } {
    const rows = this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM ids").one().n;
    return { rows, bytes: this.ctx.storage.sql.databaseSize };
  }
}

const ROUTE = /^\/v1\/streams\/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\/(events|state)$/;

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("edge-dedup-echo-sql-bench");
    const m = ROUTE.exec(url.pathname);
    if (!m) return new Response("not found", { status: 404 });
    if (request.headers.get("authorization") !== `Bearer ${TOKEN}`) return new Response("unauthorized", { status: 401 });
    const stream = env.STREAM.getByName(m[1]);
    if (m[2] === "state" && request.method === "GET") return Response.json(await stream.stats());
    if (m[2] !== "events" || request.method !== "POST") return new Response("method not allowed", { status: 405 });
    const body: unknown = JSON.parse(await request.text());
    const rows = (Array.isArray(body) ? body : [body]) as { id?: unknown }[];
    const ids: string[] = [];
    const rejected: Answer["rejected"] = [];
    rows.forEach((r, index) => {
      if (r === null || typeof r !== "object" || r.id === undefined) rejected.push({ index, error: "missing id" });
      else ids.push(JSON.stringify(r.id));
    });
    const emitted = ids.length > 0 ? await stream.insert(JSON.stringify(ids)) : 0;
    const answer: Answer = { input: rows.length, emitted, duplicates: ids.length - emitted, late: 0, rejected };
    return Response.json(answer);
  },
};

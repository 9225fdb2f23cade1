/**
 * "Echo through a Durable Object" for `npm run bench` (bench/echo-do/wrangler.toml,
 * never deployed): echo (bench/echo/worker.ts) plus the one call every
 * edge-dedup request makes, to the stream's Durable Object, which answers
 * the counts from the rows it is handed and does nothing else (no storage).
 * It is the floor of a Worker whose requests each consult one Durable
 * Object: what one RPC round trip costs on top of parsing, so bench/run.ts
 * can say how much of edge-dedup's cost per request is the call it can't
 * avoid and how much is its own work.
 */
import { DurableObject } from "cloudflare:workers";

const TOKEN = "bench-token";

type Answer = { input: number; emitted: number; duplicates: number; late: number; rejected: never[] };

interface Env {
  STREAM: { getByName(name: string): { answer(rows: unknown[]): Promise<Answer> } };
}

export class Stream extends DurableObject<Env> {
  answer(rows: unknown[]): Answer {
    const input = rows.filter((r) => r !== null && typeof r === "object").length;
    return { input, emitted: input, duplicates: 0, late: 0, rejected: [] };
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("edge-dedup-echo-do-bench");
    const m = /^\/v1\/streams\/([^/]+)\/events$/.exec(url.pathname);
    if (request.method !== "POST" || !m) return new Response("not found", { status: 404 });
    if (request.headers.get("authorization") !== `Bearer ${TOKEN}`) return new Response("unauthorized", { status: 401 });
    const body: unknown = JSON.parse(await request.text());
    const rows = Array.isArray(body) ? body : [body];
    return Response.json(await env.STREAM.getByName(m[1]).answer(rows));
  },
};

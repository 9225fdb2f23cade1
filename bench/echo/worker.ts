/**
 * "Echo" for `npm run bench` (bench/echo/wrangler.toml, never deployed): a
 * Worker that reads and parses the request body and answers with the counts
 * a dedup service would, doing nothing else (no Durable Object, no storage,
 * no R2). It is the floor under every Worker here: what parsing and the local
 * runtime's HTTP path cost by themselves, so bench/run.ts can say how close to
 * "free" edge-dedup's bookkeeping is.
 */
const TOKEN = "bench-token";

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/ping") return new Response("edge-dedup-echo-bench");
    if (request.method !== "POST" || !/^\/v1\/streams\/[^/]+\/events$/.test(url.pathname)) return new Response("not found", { status: 404 });
    if (request.headers.get("authorization") !== `Bearer ${TOKEN}`) return new Response("unauthorized", { status: 401 });
    const body: unknown = JSON.parse(await request.text());
    const rows = Array.isArray(body) ? body : [body];
    const input = rows.filter((r) => r !== null && typeof r === "object").length;
    return Response.json({ input, emitted: input, duplicates: 0, late: 0, rejected: [] });
  },
};

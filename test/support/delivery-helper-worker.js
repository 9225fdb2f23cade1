// A second Worker for the integration tests (vitest.config.ts runs it beside
// the Worker under test): it consumes the edge-dedup-deliveries queue as a
// user's consumer would (each message kept in KV by its stable id, with how
// many times it arrived), and calls edge-dedup over a service binding to its
// EdgeDedup entrypoint (Workers RPC), as another Worker of the account would.
export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname === "/rpc") {
      const { method, args } = await req.json();
      try {
        return Response.json({ ok: true, value: await env.DEDUP[method](...args) });
      } catch (e) {
        // The refusal's fields travel as the error's own properties where workerd carries them (src/rpc/refusal.ts).
        return Response.json({ ok: false, name: e.name, message: e.message, status: e.status, kind: e.kind, detail: e.detail, retryAfterMs: e.retryAfterMs });
      }
    }
    if (url.pathname === "/received") {
      const out = [];
      let cursor;
      do {
        const page = await env.RECEIVED.list({ prefix: url.searchParams.get("prefix") ?? "", cursor });
        for (const k of page.keys) out.push(JSON.parse(await env.RECEIVED.get(k.name)));
        cursor = page.list_complete ? undefined : page.cursor;
      } while (cursor);
      return Response.json(out);
    }
    return new Response("not found", { status: 404 });
  },
  async queue(batch, env) {
    for (const m of batch.messages) {
      const seen = JSON.parse((await env.RECEIVED.get(m.body.id)) ?? "null");
      await env.RECEIVED.put(m.body.id, JSON.stringify({ body: m.body, arrivals: (seen?.arrivals ?? 0) + 1 }));
      m.ack();
    }
  },
};

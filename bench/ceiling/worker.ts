/**
 * "The minimal ceiling" for `npm run bench` (bench/ceiling/wrangler.toml, never
 * deployed): the least work a Worker can do to deduplicate a batch with the
 * same building blocks as edge-dedup, so bench/run.ts can compare with it.
 *
 * POST /v1/streams/{stream}/events (JSON array or object, key ["id"], event
 * time "ts", Idempotency-Key): parse the body, hash each key to one of 8 SQLite
 * Durable Objects (`{stream}/{p}`), one RPC call per touched object running ONE
 * statement, `INSERT OR IGNORE INTO keys ... SELECT ... FROM json_each(?)
 * RETURNING k` (the keys that were new), then two create-only R2 puts: the
 * survivors as one NDJSON object (skipped when there are none, as edge-dedup
 * does) and a marker. No ledger, no watermark, no replay check before the work:
 * a retried batch is only protected by the create-only puts.
 *
 * GET /v1/streams/{stream}/state → {rows, bytes} over its 8 objects.
 */
import { DurableObject } from "cloudflare:workers";

const PARTITIONS = 8;
const DELAY_MS = 3_600_000;
const TOKEN = "bench-token";

interface KeysStub {
  insert(batch: string): Promise<string[]>;
  stats(): Promise<{ rows: number; bytes: number }>;
}
interface Env {
  KEYS: { getByName(name: string): KeysStub };
  SINK: { put(key: string, body: string, opts?: unknown): Promise<unknown> };
}

export class Keys extends DurableObject<Env> {
  constructor(ctx: unknown, env: Env) {
    super(ctx, env);
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS keys (k TEXT PRIMARY KEY, expires INTEGER NOT NULL) WITHOUT ROWID");
  }

  /** `batch`: JSON [[key, expires], ...]; returns the keys that were new. */
  insert(batch: string): string[] {
    return this.ctx.storage.sql
      .exec<{ k: string }>(
        `INSERT OR IGNORE INTO keys (k, expires)
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?) RETURNING k`,
        batch,
      )
      .toArray()
      .map((r) => r.k);
  }

  stats(): { rows: number; bytes: number } {
    const rows = this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM keys").one().n;
    return { rows, bytes: this.ctx.storage.sql.databaseSize };
  }
}

/** FNV-1a over the key's UTF-16 code units. */
function partitionOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % PARTITIONS;
}

const json = (body: unknown, status = 200) => Response.json(body, { status });
const ROUTE = /^\/v1\/streams\/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\/(events|state)$/;
const CREATE_ONLY = { onlyIf: { etagDoesNotMatch: "*" } };

export default {
  async fetch(req: Request, env: Env): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname === "/ping") return new Response("edge-dedup-ceiling-bench");
    const m = ROUTE.exec(url.pathname);
    if (!m) return json({ title: "Not found" }, 404);
    if (req.headers.get("authorization") !== `Bearer ${TOKEN}`) return json({ title: "Unauthorized" }, 401);
    const stream = m[1];
    if (m[2] === "state" && req.method === "GET") {
      const all = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => env.KEYS.getByName(`${stream}/${p}`).stats()));
      return json({ rows: all.reduce((a, s) => a + s.rows, 0), bytes: all.reduce((a, s) => a + s.bytes, 0) });
    }
    if (m[2] !== "events" || req.method !== "POST") return json({ title: "Method not allowed" }, 405);

    const batchId = req.headers.get("idempotency-key") ?? crypto.randomUUID();
    let parsed: unknown;
    try {
      parsed = JSON.parse(await req.text());
    } catch {
      return json({ title: "the body is not JSON" }, 400);
    }
    const rows = (Array.isArray(parsed) ? parsed : [parsed]) as { id?: unknown; ts?: unknown }[];
    const keys: (string | null)[] = [];
    const rejected: { index: number; error: string }[] = [];
    const groups = new Map<number, [string, number][]>();
    rows.forEach((row, index) => {
      if (typeof row !== "object" || row === null || row.id === undefined || typeof row.ts !== "number") {
        keys.push(null);
        rejected.push({ index, error: "missing id or ts" });
        return;
      }
      const key = JSON.stringify([row.id]);
      keys.push(key);
      const p = partitionOf(key);
      let g = groups.get(p);
      if (!g) groups.set(p, (g = []));
      g.push([key, row.ts + DELAY_MS]);
    });
    const fresh = new Set((await Promise.all([...groups].map(([p, g]) => env.KEYS.getByName(`${stream}/${p}`).insert(JSON.stringify(g))))).flat());
    // The first copy of a new key survives; later copies in the batch are duplicates.
    const survivors: string[] = [];
    rows.forEach((row, i) => {
      const k = keys[i];
      if (k !== null && fresh.delete(k)) survivors.push(JSON.stringify(row));
    });
    const outcome = {
      batchId,
      source: req.headers.get("x-source") ?? "default",
      replayed: false,
      input: rows.length,
      emitted: survivors.length,
      duplicates: rows.length - rejected.length - survivors.length,
      late: 0,
      rejected,
    };
    const id = encodeURIComponent(batchId);
    if (survivors.length > 0) await env.SINK.put(`streams/${stream}/data/${id}.ndjson`, survivors.join("\n") + "\n", CREATE_ONLY);
    await env.SINK.put(`streams/${stream}/_commits/${id}.json`, JSON.stringify(outcome), CREATE_ONLY);
    return json(outcome, 200);
  },
};

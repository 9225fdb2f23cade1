/**
 * Bench-only Worker for `npm run bench:micro` (bench/wrangler.toml): runs the
 * Partition's key lookup + insert inside a SQLite Durable Object with two
 * strategies, so bench/micro.ts can time them side by side.
 *
 *   json: one `SELECT ... WHERE k IN (SELECT value FROM json_each(?))` and one
 *         `INSERT ... SELECT ... FROM json_each(?)` per sub-batch, exactly as
 *         src/partition/partition.ts does;
 *   row:  one SELECT per row and one INSERT per new row.
 *
 * Each batch runs in its own transactionSync, like one Partition.apply call.
 * Date.now() does not advance inside workerd while code runs without I/O, so
 * nothing is timed here: bench/micro.ts times each HTTP call from Node.
 *
 * Written without `cloudflare:workers` types (tsconfig.node.json, which covers
 * bench/, has only Node's): the few storage APIs used are declared below.
 */

interface SqlCursor<T> {
  toArray(): T[];
  one(): T;
}
interface SqlStorage {
  exec<T = Record<string, unknown>>(query: string, ...bindings: unknown[]): SqlCursor<T>;
  readonly databaseSize: number;
}
interface DOState {
  storage: { sql: SqlStorage; transactionSync<T>(fn: () => T): T };
}
interface DOStub {
  fetch(req: Request): Promise<Response>;
}
interface DONamespace {
  idFromName(name: string): unknown;
  get(id: unknown): DOStub;
}
interface Env {
  SQL_BENCH: DONamespace;
}

const HOUR = 3_600_000;
const BASE_TIME = Date.UTC(2026, 10, 1);

/** The Partition's keys table (src/partition/partition.ts), index included: inserts maintain it. */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS keys (k TEXT PRIMARY KEY, t INTEGER, expires INTEGER) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS keys_by_expiry ON keys (expires) WHERE expires IS NOT NULL;
`;

/** A canonical key as src/stream/key.ts encodes it: a JSON array of the key columns. */
const oldKey = (i: number) => JSON.stringify([`old-${String(i).padStart(8, "0")}`]);
const newKey = (i: number) => JSON.stringify([`new-${String(i).padStart(8, "0")}`]);

interface Row {
  key: string;
  eventTime: number;
}

/**
 * Batch b of n rows: n/2 keys stored by /setup and n/2 new ones, interleaved.
 * Deterministic, so both strategies see the same work.
 */
function batchRows(b: number, n: number): Row[] {
  const half = Math.floor(n / 2);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const j = b * half + Math.floor(i / 2);
    const key = i % 2 === 0 && i / 2 < half ? oldKey(j) : newKey(b * n + i);
    rows.push({ key, eventTime: BASE_TIME + (b * n + i) * 100 });
  }
  return rows;
}

interface RunResult {
  strategy: string;
  batches: number;
  rowsPerBatch: number;
  found: number;
  inserted: number;
  rows: number;
}

export class SqlBench {
  private readonly ctx: DOState;
  private readonly sql: SqlStorage;

  constructor(ctx: DOState, _env: Env) {
    this.ctx = ctx;
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const batches = intParam(url, "batches", 40);
    const n = intParam(url, "n", 500);
    switch (url.pathname) {
      case "/noop":
        return Response.json({ ok: true });
      case "/setup":
        return Response.json(this.setup(batches, n));
      case "/run": {
        const strategy = url.searchParams.get("strategy");
        if (strategy === "json") return Response.json(this.run(strategy, batches, n, (rows) => this.applyJson(rows)));
        if (strategy === "row") return Response.json(this.run(strategy, batches, n, (rows) => this.applyPerRow(rows)));
        return new Response("strategy must be json or row", { status: 400 });
      }
      default:
        return new Response("not found", { status: 404 });
    }
  }

  /** Stores the keys the run will find again: batches × n/2 of them, in chunks of 1,000 (setup is not timed). */
  private setup(batches: number, n: number): { rows: number } {
    this.sql.exec("DELETE FROM keys");
    const total = batches * Math.floor(n / 2);
    for (let start = 0; start < total; start += 1000) {
      const chunk: [string, number, number][] = [];
      for (let i = start; i < Math.min(total, start + 1000); i++) chunk.push([oldKey(i), BASE_TIME - HOUR + i, BASE_TIME + i]);
      this.insertJson(chunk);
    }
    return { rows: this.count() };
  }

  private run(strategy: string, batches: number, n: number, apply: (rows: Row[]) => { found: number; inserted: number }): RunResult {
    let found = 0;
    let inserted = 0;
    for (let b = 0; b < batches; b++) {
      const rows = batchRows(b, n);
      const r = this.ctx.storage.transactionSync(() => apply(rows));
      found += r.found;
      inserted += r.inserted;
    }
    return { strategy, batches, rowsPerBatch: n, found, inserted, rows: this.count() };
  }

  /** src/partition/partition.ts: one json_each lookup, one json_each insert. */
  private applyJson(rows: Row[]): { found: number; inserted: number } {
    const probe = new Set(rows.map((r) => r.key));
    const found = this.sql.exec<{ k: string }>("SELECT k FROM keys WHERE k IN (SELECT value FROM json_each(?))", JSON.stringify([...probe])).toArray();
    const remembered = new Set(found.map((r) => r.k));
    const inserts: [string, number, number][] = [];
    const seen = new Set<string>();
    for (const r of rows) {
      if (seen.has(r.key) || remembered.has(r.key)) continue;
      seen.add(r.key);
      inserts.push([r.key, r.eventTime, r.eventTime + HOUR]);
    }
    if (inserts.length > 0) this.insertJson(inserts);
    return { found: remembered.size, inserted: inserts.length };
  }

  /** The alternative: one SELECT per row, one INSERT per new row. */
  private applyPerRow(rows: Row[]): { found: number; inserted: number } {
    let found = 0;
    let inserted = 0;
    const seen = new Set<string>();
    for (const r of rows) {
      if (seen.has(r.key)) continue;
      seen.add(r.key);
      const hit = this.sql.exec<{ k: string }>("SELECT k FROM keys WHERE k = ?", r.key).toArray();
      if (hit.length > 0) {
        found++;
        continue;
      }
      this.sql.exec("INSERT INTO keys (k, t, expires) VALUES (?, ?, ?)", r.key, r.eventTime, r.eventTime + HOUR);
      inserted++;
    }
    return { found, inserted };
  }

  private insertJson(rows: [string, number, number][]): void {
    this.sql.exec(
      `INSERT INTO keys (k, t, expires)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)`,
      JSON.stringify(rows),
    );
  }

  private count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM keys").one().n;
  }
}

function intParam(url: URL, name: string, fallback: number): number {
  const v = Number(url.searchParams.get(name) ?? fallback);
  if (!Number.isInteger(v) || v < 1 || v > 100_000) throw new Error(`${name} must be an integer in 1..100000`);
  return v;
}

export default {
  async fetch(req: Request, env: Env): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname === "/ping") return new Response("edge-dedup-sql-bench");
    const name = url.searchParams.get("do");
    if (!name) return new Response("?do=<object name> is required", { status: 400 });
    return env.SQL_BENCH.get(env.SQL_BENCH.idFromName(name)).fetch(req);
  },
};

/**
 * Bench-only operation counters: Durable Object calls, SQL statements and R2
 * operations, counted where they are made. `__OPCOUNT__` is a build-time
 * constant: false in wrangler.toml, so a deployed Worker counts nothing and
 * every wrapper below returns its argument unchanged; `npm run bench` starts
 * `wrangler dev --define __OPCOUNT__:true`, and then `GET /__opcount` returns
 * the counters and resets them (the route exists only with the flag on).
 *
 * Where counts are taken (so a rewrite of ingest, partition or coordinator
 * keeps being counted without touching this file):
 * - DO calls: on the caller's side. `countedEnv(env)` wraps every Durable Object
 *   namespace in an env (stubs it hands out count each method call) and every
 *   R2 bucket (each method call counts). The Worker's env is wrapped at the
 *   entry (`withOpCount` in src/index.ts), a Durable Object's own env in its
 *   constructor, so DO→DO calls (eviction fan-out) count too. Each call
 *   counts twice over: by `BINDING.method` and by the object called
 *   (`BINDING name`), so the bench can tell how the load spreads over a
 *   stream's objects (its hottest object's share).
 * - SQL statements: `countedSql(ctx.storage.sql, "Partition")` in each DO's
 *   constructor counts every `exec` (a multi-statement string counts once).
 * - SQLite rows written and read (what Cloudflare bills a SQLite Durable
 *   Object for): the cursor each `exec` returns reports them once consumed,
 *   so a statement's rows are added when the next statement starts (a DO
 *   consumes a cursor before its next statement) or when the counters are
 *   taken. Index updates and deletes count as rows written, as billed.
 * - Micro-batch wall time: each Coordinator's `batchTimer()`
 *   (src/instrument/batch-timing.ts), summed in `microBatches`.
 *
 * The counters are module state. Locally `wrangler dev` runs the Worker and all
 * Durable Objects of the script in one workerd isolate, so one set of counters
 * sees everything (bench/run.ts checks that SQL statements, which happen
 * only inside Durable Objects, show up in what the Worker returns).
 */
import { BatchTimer, noMicroBatchTimes, type MicroBatchTimes } from "./batch-timing";

declare const __OPCOUNT__: boolean;

export function opcountEnabled(): boolean {
  return typeof __OPCOUNT__ !== "undefined" && __OPCOUNT__;
}

export interface OpCounts {
  /** HTTP requests the Worker's fetch handler served (the counters' own route excluded) */
  requests: number;
  /** `BINDING.method` → calls, e.g. `PARTITION.apply` */
  doCalls: Record<string, number>;
  /**
   * `BINDING name` → calls: the same calls by the object called, named as its
   * stub was got (`getByName`/`idFromName`; else the id's name or hex), e.g.
   * `COORDINATOR s`, `PARTITION s/3`. At most MAX_OBJECT_KEYS names between
   * two takes; calls to further objects count under `other`.
   */
  doCallsByObject: Record<string, number>;
  /** DO class → `sql.exec` calls */
  sql: Record<string, number>;
  /** DO class → SQLite rows written (cursor.rowsWritten) */
  rowsWritten: Record<string, number>;
  /** DO class → SQLite rows read (cursor.rowsRead) */
  rowsRead: Record<string, number>;
  /** `Class: statement` (its first words) → SQLite rows written: where the rows go (the bench prints the top ones) */
  rowsWrittenBy: Record<string, number>;
  /** `Class: statement` → SQLite rows read */
  rowsReadBy: Record<string, number>;
  /** `BINDING.method` → calls, e.g. `SINK.put` */
  r2: Record<string, number>;
  /** where the micro-batches' wall time went, summed over every stream (src/instrument/batch-timing.ts) */
  microBatches: MicroBatchTimes;
  /** ms since the last reset */
  sinceMs: number;
}

let counts = fresh();
let since = Date.now();
/** Bounds doCallsByObject: a load over many streams must not grow the counters without end. */
export const MAX_OBJECT_KEYS = 10_000;
let objectKeys = 0;

function fresh(): OpCounts {
  return {
    requests: 0,
    doCalls: {},
    doCallsByObject: {},
    sql: {},
    rowsWritten: {},
    rowsRead: {},
    rowsWrittenBy: {},
    rowsReadBy: {},
    r2: {},
    microBatches: noMicroBatchTimes(),
    sinceMs: 0,
  };
}

function bump(table: Record<string, number>, key: string): void {
  table[key] = (table[key] ?? 0) + 1;
}

/** The last statement's cursor, whose rows are added once it has been consumed. */
let open: { who: string; statement: string; cursor: SqlStorageCursor<Record<string, SqlStorageValue>> } | null = null;

function settleOpen(): void {
  if (!open) return;
  const { who, statement, cursor } = open;
  open = null;
  counts.rowsWritten[who] = (counts.rowsWritten[who] ?? 0) + cursor.rowsWritten;
  const by = `${who}: ${statement}`;
  if (cursor.rowsWritten > 0) counts.rowsWrittenBy[by] = (counts.rowsWrittenBy[by] ?? 0) + cursor.rowsWritten;
  if (cursor.rowsRead > 0) counts.rowsReadBy[by] = (counts.rowsReadBy[by] ?? 0) + cursor.rowsRead;
  counts.rowsRead[who] = (counts.rowsRead[who] ?? 0) + cursor.rowsRead;
}

/** Returns the counters and starts new ones. */
export function takeOpCounts(): OpCounts {
  settleOpen();
  const out = { ...counts, sinceMs: Date.now() - since };
  counts = fresh();
  objectKeys = 0;
  since = Date.now();
  return out;
}

/** A Coordinator's micro-batch timer, adding to the counters (null when they are off: nothing is timed). */
export function batchTimer(): BatchTimer | null {
  return opcountEnabled() ? new BatchTimer(() => counts.microBatches) : null;
}

function bumpObject(key: string): void {
  const table = counts.doCallsByObject;
  if (!(key in table)) {
    if (objectKeys >= MAX_OBJECT_KEYS) key = "other";
    else objectKeys++;
  }
  bump(table, key);
}

/** A function property of a native object, called on that object, counted first. */
function countedMethods<T extends object>(
  target: T,
  onCall: (method: string) => void,
  wrapResult?: (method: string, r: unknown, args: unknown[]) => unknown,
): T {
  return new Proxy(target, {
    get(t, prop) {
      const v = Reflect.get(t, prop);
      if (typeof v !== "function" || typeof prop !== "string") return v;
      return (...args: unknown[]) => {
        onCall(prop);
        const r = Reflect.apply(v, t, args);
        return wrapResult ? wrapResult(prop, r, args) : r;
      };
    },
  });
}

/** A statement's first words, whitespace folded: enough to tell statements apart in a breakdown. */
function statementOf(query: unknown): string {
  return String(query).replace(/\s+/g, " ").trim().slice(0, 72);
}

/** Counts every statement run through this SqlStorage under `who` (the DO class). */
export function countedSql(sql: SqlStorage, who: string): SqlStorage {
  if (!opcountEnabled()) return sql;
  return new Proxy(sql, {
    get(t, prop) {
      const v = Reflect.get(t, prop);
      if (prop !== "exec" || typeof v !== "function") return typeof v === "function" ? v.bind(t) : v;
      return (...args: unknown[]) => {
        bump(counts.sql, who);
        settleOpen();
        const cursor = Reflect.apply(v, t, args) as SqlStorageCursor<Record<string, SqlStorageValue>>;
        open = { who, statement: statementOf(args[0]), cursor };
        return cursor;
      };
    },
  });
}

const isNamespace = (v: unknown): v is DurableObjectNamespace =>
  typeof v === "object" && v !== null && typeof (v as DurableObjectNamespace).idFromName === "function";
const isBucket = (v: unknown): v is R2Bucket =>
  typeof v === "object" && v !== null && typeof (v as R2Bucket).put === "function" && typeof (v as R2Bucket).head === "function";

/** The env with its DO namespaces and R2 buckets counted (unchanged when the flag is off). */
export function countedEnv<E extends object>(env: E): E {
  if (!opcountEnabled()) return env;
  const wrapped = new Map<string | symbol, unknown>();
  return new Proxy(env, {
    get(t, prop) {
      if (wrapped.has(prop)) return wrapped.get(prop);
      const v = Reflect.get(t, prop);
      const name = String(prop);
      let w: unknown = v;
      if (isNamespace(v)) {
        // get/getByName hand out stubs; every method call on a stub is one DO call, counted by method and by object.
        // An id keeps the name idFromName made it from (id.name may be missing on older runtimes).
        const names = new WeakMap<object, string>();
        w = countedMethods(
          v,
          () => undefined,
          (method, r, args) => {
            if (typeof r !== "object" || r === null) return r;
            if (method === "idFromName") {
              names.set(r, String(args[0]));
              return r;
            }
            if (method !== "get" && method !== "getByName") return r;
            const id = args[0] as DurableObjectId;
            const object = `${name} ${method === "getByName" ? String(args[0]) : (names.get(id) ?? id.name ?? id.toString())}`;
            return countedMethods(r, (m) => {
              bump(counts.doCalls, `${name}.${m}`);
              bumpObject(object);
            });
          },
        );
      } else if (isBucket(v)) {
        w = countedMethods(v, (m) => bump(counts.r2, `${name}.${m}`));
      }
      wrapped.set(prop, w);
      return w;
    },
  });
}

type FetchHandler<E> = { fetch(req: Request, env: E, ctx: ExecutionContext): Response | Promise<Response> };

/**
 * The Worker's entry with counting: its env counted, `GET /__opcount` answered
 * with the counters (then reset). With the flag off it returns `handler` itself.
 */
export function withOpCount<E extends object, H extends FetchHandler<E>>(handler: H): H {
  if (!opcountEnabled()) return handler;
  return {
    fetch(req: Request, env: E, ctx: ExecutionContext) {
      if (new URL(req.url).pathname === "/__opcount") {
        return req.method === "GET" ? Response.json(takeOpCounts()) : new Response(null, { status: 405, headers: { allow: "GET" } });
      }
      counts.requests++;
      return handler.fetch(req, countedEnv(env), ctx);
    },
  } as unknown as H;
}

/**
 * What PUT /v1/streams/{stream} accepts: a bounded body, bounded lists, and
 * source names that follow the one name rule (none vanishes). A refused
 * config is a 4xx problem+json and changes nothing.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../../src/api/app";
import { MAX_CONFIG_BYTES, MAX_SCHEMA_COLUMNS, MAX_SOURCES } from "../../../src/stream/config";
import { AUTH, call, countingBody, createStream, json } from "../helpers";

const base = { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 };
const named = (n: number, value: unknown, prefix = "s") => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, value]));

async function problem(r: Response, status: number) {
  expect(r.status).toBe(status);
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  return r.json<any>();
}

const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;

function putDirect(stream: string, init: RequestInit) {
  return app.fetch(new Request(`http://edge-dedup.test/v1/streams/${stream}`, { method: "PUT", ...init }), env, ctx);
}

/** The Worker's env with every Durable Object call it makes written down as "NAMESPACE.method" (the objects are the real ones). */
function callsCounted(calls: string[]): typeof env {
  const counted = (stub: object, ns: string) =>
    new Proxy(stub, {
      get(s, m) {
        const f = Reflect.get(s, m);
        return typeof f !== "function" ? f : (...args: unknown[]) => (calls.push(`${ns}.${String(m)}`), Reflect.apply(f, s, args));
      },
    });
  return new Proxy(env, {
    get(t, prop) {
      const v = Reflect.get(t, prop);
      if (v === null || typeof v !== "object" || typeof (v as { getByName?: unknown }).getByName !== "function") return v;
      return new Proxy(v, {
        get(ns, p) {
          const f = Reflect.get(ns, p);
          if (typeof f !== "function") return f;
          return p === "get" || p === "getByName" ? (...args: unknown[]) => counted(Reflect.apply(f, ns, args), String(prop)) : f.bind(ns);
        },
      });
    },
  });
}

describe("the config body is bounded", () => {
  it(`a body over ${MAX_CONFIG_BYTES} bytes is a 413, and no stream is made`, async () => {
    // The review's 5 MB config: one long location string.
    const big = { ...base, mode: "global", table: { format: "iceberg", location: "x".repeat(5 * 1024 * 1024) } };
    const p = await problem(await call("PUT", "/v1/streams/cb-big", big), 413);
    expect(p).toMatchObject({
      type: "https://edge-dedup.dev/problems/body-too-large",
      detail: `the stream config is larger than ${MAX_CONFIG_BYTES} bytes, the most a config may be`,
    });
    expect((await call("GET", "/v1/streams/cb-big")).status).toBe(404);
    // Just under the cap is read (and judged on its merits).
    const padded = JSON.stringify(base);
    const r = await call("PUT", "/v1/streams/cb-edge", padded + " ".repeat(MAX_CONFIG_BYTES - padded.length));
    expect(r.status, await r.clone().text()).toBe(201);
  });

  it("a declared Content-Length over the cap is refused before the body is read; an undeclared one is cut at the cap", async () => {
    const declared = countingBody("x".repeat(1024), 1024);
    const r = await putDirect("cb-len", { body: declared.body, headers: { ...AUTH, "content-length": String(1024 * 1024) }, duplex: "half" } as RequestInit);
    expect(r.status).toBe(413);
    expect(declared.seen.pulled).toBeLessThanOrEqual(1024);
    const streamed = countingBody(" ".repeat(1024), 1024);
    const r2 = await putDirect("cb-len", { body: streamed.body, headers: AUTH, duplex: "half" } as RequestInit);
    expect(r2.status).toBe(413);
    expect(streamed.seen.pulled).toBeLessThanOrEqual(MAX_CONFIG_BYTES + 2 * 1024);
  });

  it("a body that is not JSON, or nested too deep, is a 400 that quotes nothing", async () => {
    const p = await problem(await call("PUT", "/v1/streams/cb-json", '{"key": ["sk_live_x"'), 400);
    expect(p.detail).toMatch(/^the body is not valid JSON \(/);
    expect(JSON.stringify(p)).not.toContain("sk_live");
    const deep = await problem(await call("PUT", "/v1/streams/cb-json", `{"key": ${"[".repeat(5000)}${"]".repeat(5000)}}`), 400);
    expect(deep.detail).toMatch(/more than 64 levels deep/);
  });
});

describe("bounded lists", () => {
  it(`at most ${MAX_SOURCES} declared sources: more is a 400 on create and on update, which keeps the config`, async () => {
    const p = await problem(await call("PUT", "/v1/streams/cb-src", { ...base, sources: named(MAX_SOURCES + 1, {}) }), 400);
    expect(p).toMatchObject({
      detail: "the stream config is invalid",
      errors: [{ path: "sources", message: `at most ${MAX_SOURCES} sources may be declared` }],
    });
    expect((await call("GET", "/v1/streams/cb-src")).status).toBe(404);
    await createStream("cb-src", { ...base, sources: named(MAX_SOURCES, { watermarkDelay: "1 minute" }) });
    await problem(await call("PUT", "/v1/streams/cb-src", { ...base, sources: named(MAX_SOURCES + 1, {}) }), 400);
    const d = await json(call("GET", "/v1/streams/cb-src"));
    expect(Object.keys(d.config.sources)).toHaveLength(MAX_SOURCES);
    expect(d.config.sources.s0).toEqual({ watermarkDelay: 60_000 });
  });

  it(`at most ${MAX_SCHEMA_COLUMNS} schema columns`, async () => {
    const p = await problem(await call("PUT", "/v1/streams/cb-schema", { ...base, schema: named(MAX_SCHEMA_COLUMNS + 1, "int", "c") }), 400);
    expect(p.errors).toEqual([{ path: "schema", message: `at most ${MAX_SCHEMA_COLUMNS} columns may be declared` }]);
  });
});

describe("reads do not fan out per source", () => {
  it(`with ${MAX_SOURCES} sources that all sent, /metrics makes 2 object calls per stream and none per source; GET the stream 1`, async () => {
    await createStream("cb-fan", { key: ["id"], mode: "global", partitions: 2, sources: named(MAX_SOURCES, {}) });
    for (let i = 0; i < MAX_SOURCES; i++) expect((await call("POST", "/v1/streams/cb-fan/events", { id: i }, { "x-source": `s${i}` })).status).toBe(200);
    const read = async (path: string) => {
      const calls: string[] = [];
      const r = await app.fetch(new Request(`http://edge-dedup.test${path}`, { headers: AUTH }), callsCounted(calls), ctx);
      expect(r.status).toBe(200);
      return { calls, text: await r.text() };
    };
    const metrics = await read("/metrics");
    expect(metrics.text.match(/^edge_dedup_watermark_ms\{stream="cb-fan",source="s\d+"\}/gm)).toHaveLength(MAX_SOURCES);
    // Two calls per registered stream (its Coordinator, its destination index), none per source.
    const streams = (await json(call("GET", "/v1/streams"))).streams.length;
    expect(metrics.calls.filter((c) => !c.startsWith("REGISTRY.")).sort()).toEqual([
      ...Array<string>(streams).fill("COORDINATOR.metrics"),
      ...Array<string>(streams).fill("DESTINATION.members"),
    ]);
    expect((await read("/v1/streams/cb-fan")).calls).toEqual(["COORDINATOR.describe"]);
  });
});

describe("source names follow the one name rule; none vanishes or aliases", () => {
  it('"__proto__" as a source is a 400, not a source that silently vanishes', async () => {
    const body = `{"key": ["id"], "mode": "global", "sources": {"__proto__": {"disabled": true}}}`;
    const p = await problem(await call("PUT", "/v1/streams/cb-proto", body), 400);
    expect(p.errors).toEqual([{ path: "sources.__proto__", message: "1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit" }]);
    expect((await call("GET", "/v1/streams/cb-proto")).status).toBe(404);
  });

  it("other odd names are refused by the same rule", async () => {
    for (const name of ["", "a b", "_x", "-x", "a/b", "é", "a".repeat(65)]) {
      const p = await problem(await call("PUT", "/v1/streams/cb-odd", { ...base, sources: { [name]: {} } }), 400);
      expect(p.errors, name).toEqual([expect.objectContaining({ path: `sources.${name}` })]);
    }
  });

  it("constructor, toString and hasOwnProperty are sources of their own, kept through storage", async () => {
    const sources = { constructor: { watermarkDelay: "1 minute" }, toString: { disabled: true }, hasOwnProperty: {} };
    await createStream("cb-names", { ...base, sources });
    const d = await json(call("GET", "/v1/streams/cb-names"));
    expect(d.config.sources).toEqual({ constructor: { watermarkDelay: 60_000 }, toString: { disabled: true }, hasOwnProperty: {} });
    expect(Object.keys(d.sources).sort()).toEqual(["constructor", "hasOwnProperty", "toString"]);
    // toString is disabled: its batches are refused; constructor's are not.
    expect((await call("POST", "/v1/streams/cb-names/events", { id: "a", ts: Date.now() }, { "x-source": "toString" })).status).toBe(403);
    expect((await call("POST", "/v1/streams/cb-names/events", { id: "a", ts: Date.now() }, { "x-source": "constructor" })).status).toBe(200);
  });
});

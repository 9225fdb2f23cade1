/**
 * Who may call what, as the route table (src/api/routes) declares it, through
 * the real Worker: no request without a credential to a route the table does
 * not mark public gets anything but 401 or 403, whatever the stream and source
 * names in its path, its headers or its body; and a declared path with another
 * method is a 405 naming the declared ones.
 */
import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { allowedMethods, METHODS, pathParams, type Route } from "../../../src/api/route";
import { ROUTES } from "../../../src/api/routes";
import { AUTH as ADMIN, client, createStream } from "../helpers";

/** The only routes open to anyone: liveness, the contract and the dashboard's page shell (no data behind any). */
const PUBLIC = ["get /dashboard", "get /docs", "get /favicon.ico", "get /healthz", "get /openapi.json"];

const LIVE = "ra-live";
const guarded = ROUTES.filter((r) => r.auth !== "public");

beforeAll(async () => {
  // Names that exist, with credentials behind them, are among those tried.
  await createStream(LIVE, { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes" });
  await client.createCredential(LIVE, "main", { type: "token" });
  await client.createCredential(LIVE, "hooks", { type: "stripe", secret: "whsec_route_auth" });
});

const name = fc.oneof(
  fc.constantFrom(LIVE, "main", "hooks", "default", "files", "absent"),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,24}$/),
  fc.string({ maxLength: 80, unit: "binary" }),
);

/** A header's value, any printable ASCII. */
const ascii = fc.stringMatching(/^[\x20-\x7e]{0,70}$/);

/** An Authorization header that carries no credential: none, another scheme, a Bearer without a token. */
const noCredential = fc.constantFrom(undefined, "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Token abc", "");

/** A request a caller without a credential may send to `r`. */
const unauthenticated = (r: Route) =>
  fc.record({
    names: fc.array(name, { minLength: 3, maxLength: 3 }),
    // A token that is no one's is refused too, where it can be judged without a stream: admin routes and webhooks.
    authorization:
      r.auth === "ingest"
        ? noCredential
        : fc.oneof(
            noCredential,
            fc.stringMatching(/^[\x21-\x7e]{1,40}$/).map((t) => `Bearer ${t}`),
          ),
    source: fc.option(fc.oneof(fc.constantFrom("main", "hooks"), ascii), { nil: undefined }),
    batchId: fc.option(ascii, { nil: undefined }),
    contentType: fc.constantFrom("application/json", "application/x-ndjson", "text/plain"),
    body: fc.oneof(fc.constant('[{"id":"a","ts":1704103200000}]'), fc.constant('{"prefix":"in/","type":"token"}'), fc.string({ maxLength: 200 })),
  });

function url(r: Route, names: string[]): string {
  let path = r.path;
  pathParams(r.path).forEach((p, i) => (path = path.replace(`:${p}`, encodeURIComponent(names[i]!))));
  return `http://edge-dedup.test${path}`;
}

describe("the route table's auth", () => {
  it("marks public exactly liveness, the contract and the dashboard's page", () => {
    expect(
      ROUTES.filter((r) => r.auth === "public")
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    ).toEqual(PUBLIC);
    expect(guarded.length).toBeGreaterThan(15);
  });

  it("answers no unauthenticated request to a guarded route but 401 or 403, whatever the names", async () => {
    const byName = new Map(guarded.map((r) => [`${r.method} ${r.path}`, r]));
    const request = fc.constantFrom(...byName.keys()).chain((route) => unauthenticated(byName.get(route)!).map((q) => ({ route, q })));
    await fc.assert(
      fc.asyncProperty(request, async ({ route, q }) => {
        const r = byName.get(route)!;
        const headers: Record<string, string> = { "content-type": q.contentType };
        if (q.authorization !== undefined) headers.authorization = q.authorization;
        if (q.source !== undefined) headers["x-source"] = q.source;
        if (q.batchId !== undefined) headers["idempotency-key"] = q.batchId;
        const method = r.method.toUpperCase();
        const res = await exports.default.fetch(url(r, q.names), { method, headers, body: method === "GET" || method === "DELETE" ? undefined : q.body });
        const text = await res.text();
        expect([401, 403], `${method} ${url(r, q.names)} (${JSON.stringify(headers)}): ${res.status} ${text}`).toContain(res.status);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      }),
      { numRuns: 300 },
    );
    // Nothing was created or changed by any of them.
    expect((await client.listStreams()).streams.map((s) => s.name)).toEqual([LIVE]);
    expect((await client.progress(LIVE)).length).toBe(0);
    expect((await client.listCredentials(LIVE, "main")).length).toBe(1);
  });

  it("answers a declared path with another method 405, naming the declared ones", async () => {
    for (const [path, allow] of allowedMethods(ROUTES)) {
      const declared = allow.toLowerCase().split(", ");
      const target = `http://edge-dedup.test${path.replace(":stream", LIVE).replace(":source", "main").replace(":id", "x")}`;
      for (const other of METHODS.filter((m) => !declared.includes(m))) {
        const res = await exports.default.fetch(target, { method: other.toUpperCase(), headers: ADMIN });
        expect(res.status, `${other} ${path}`).toBe(405);
        expect(res.headers.get("allow")).toBe(allow);
      }
    }
    expect(allowedMethods(ROUTES).get("/v1/streams/:stream")).toBe("GET, PUT, PATCH, DELETE");
  });
});

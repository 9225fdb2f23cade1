/**
 * The contract (src/api/openapi.ts): every route the app serves is in
 * /openapi.json, request bodies are the schemas the routes validate with, and
 * real responses parse with the response schemas the document publishes.
 */
import { describe, expect, it } from "vitest";
import { app } from "../../src/api/app";
import { adviceSchema, outcomeSchema, problemSchema, progressSchema } from "../../src/api/openapi";
import { at, call, createStream, json, post } from "./helpers";

describe("the OpenAPI document", () => {
  it("lists every route the app serves, with its method", async () => {
    const r = await call("GET", "/openapi.json", undefined, {});
    expect(r.status).toBe(200);
    const doc = await r.json<any>();
    expect(doc.openapi).toBe("3.1.0");
    const served = app.routes
      .filter((rt) => ["GET", "POST", "PUT", "DELETE"].includes(rt.method) && !rt.path.startsWith("/__"))
      .map((rt) => `${rt.method.toLowerCase()} ${rt.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(new Set(served).size).toBeGreaterThan(15);
    for (const route of served) expect(documented, route).toContain(route);
    for (const route of documented) expect(served, route).toContain(route);
    // The stream config's schema is the one PUT validates with (zod's own conversion).
    const put = doc.paths["/v1/streams/{stream}"].put.requestBody.content["application/json"].schema;
    expect(Object.keys(put.properties)).toEqual(expect.arrayContaining(["key", "eventTime", "mode", "watermarkDelay", "table", "limits"]));
    // Query parameters are published with their defaults (and rendered into /docs and docs/reference/http-api.md).
    const output = doc.paths["/v1/streams/{stream}/output"].get.parameters;
    expect(output).toContainEqual(expect.objectContaining({ name: "after", in: "query", schema: expect.objectContaining({ type: "integer", default: 0 }) }));
    const state = doc.paths["/v1/streams/{stream}/state"].get.parameters;
    expect(state).toContainEqual(expect.objectContaining({ name: "partition", in: "query", required: true }));
  });

  it("publishes response shapes that real responses have", async () => {
    await createStream("oa", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
    const rows = [{ id: "A", ts: at(10, 0) }, { id: "A", ts: at(10, 0) }, { ts: at(10, 1) }];
    outcomeSchema.parse(await post("oa", rows));
    progressSchema.parse(await json(call("GET", "/v1/streams/oa/progress")));
    adviceSchema.strict().parse(await json(call("GET", "/v1/streams/oa/advice")));
    problemSchema.parse(await json(call("GET", "/v1/streams/nope")));
    const page = await (await call("GET", "/docs", undefined, {})).text();
    expect(page).toContain("/v1/streams/{stream}/events");
    expect(page).toContain("<code>?after</code>");
  });
});

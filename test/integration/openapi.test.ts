/**
 * The contract (src/api/openapi.ts): every route the app serves is in
 * /openapi.json, request bodies are the schemas the routes validate with, and
 * real responses parse with the response schemas the document publishes.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { app } from "../../src/api/app";
import {
  adviceSchema, publicationSchema, credentialCreatedSchema, credentialListSchema, healthSchema, healthzSchema, outcomeSchema, problemSchema, progressSchema, putStreamResultSchema,
  runSchema, runStartedSchema, statePageSchema, streamInfoSchema, streamListSchema, tableSnapshotSchema,
} from "../../src/api/openapi";
import { at, call, client, createStream, json, post } from "./helpers";

/** Parses `body` and asserts nothing was dropped: the schema lists every field the service sent (loose parts pass theirs through). */
function holds(schema: z.ZodType, body: unknown): void {
  expect(schema.parse(body)).toEqual(body);
}

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
    expect(state).toContainEqual(expect.objectContaining({ name: "partition", in: "query" }));
    expect(state).toContainEqual(expect.objectContaining({ name: "row", in: "query", schema: expect.objectContaining({ type: "string" }) }));
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

  it("publishes the shape of every other JSON answer, as real answers have it", async () => {
    const put = await client.putStream("oa2", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2, table: { format: "iceberg" }, sources: { a: {} } });
    expect(put.status).toBe(201);
    holds(putStreamResultSchema, put.result);
    holds(putStreamResultSchema, (await client.putStream("oa2", { key: ["id"], eventTime: "ts", watermarkDelay: "6 minutes", partitions: 2, table: { format: "iceberg" } })).result);
    await post("oa2", [{ id: "A", ts: at(10, 0) }, { id: "B", ts: at(10, 1) }], { "x-source": "a" });
    holds(streamInfoSchema, await client.getStream("oa2"));
    const list = await client.listStreams({ limit: 1 });
    expect(list.streams).toHaveLength(1);
    holds(streamListSchema, list);
    const state = await client.state("oa2", { partition: 0 });
    holds(statePageSchema, state);
    expect(state.keys.length + (await client.state("oa2", { partition: 1 })).keys.length).toBe(2);
    holds(healthSchema, await client.health("oa2"));
    holds(healthzSchema, await client.healthz());

    const created = await client.createCredential("oa2", "a", { type: "token", label: "ci" });
    holds(credentialCreatedSchema, created);
    holds(credentialListSchema, await json(call("GET", "/v1/streams/oa2/sources/a/credentials")));
    expect((await client.listCredentials("oa2", "a")).map((c) => c.id)).toEqual([created.id]);

    await runDurableObjectAlarm(env.COORDINATOR.getByName("oa2"));
    holds(tableSnapshotSchema, await client.table("oa2"));

    await env.INPUT.put("oa/in/1.ndjson", '{"id":"C","ts":' + at(10, 2) + "}\n");
    const started = await client.startRun("oa2", { prefix: "oa/in/" });
    holds(runStartedSchema, started);
    holds(runSchema, await client.getRun("oa2", started.id));
    // A run is done once the table holds what it ingested: the Coordinator's publishing alarm (due in ~2 s) is run at once too.
    for (let i = 0; i < 20 && (await client.getRun("oa2", started.id)).status === "running"; i++) {
      await runDurableObjectAlarm(env.RUNNER.getByName("oa2"));
      await runDurableObjectAlarm(env.COORDINATOR.getByName("oa2"));
    }
    const done = await client.getRun("oa2", started.id);
    expect(done).toMatchObject({ status: "done", emitted: 1 });
    holds(runSchema, done);
    holds(publicationSchema, await json(call("GET", "/v1/streams/oa2/publication")));
  });
});

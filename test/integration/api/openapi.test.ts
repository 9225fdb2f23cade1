/**
 * The contract (src/api/openapi.ts): every route the app serves is declared
 * in src/api/routes and in /openapi.json, request bodies are the schemas the routes validate with, and
 * real responses parse with the response schemas the document publishes.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { app } from "../../../src/api/app";
import type { Answer, QueryOf } from "../../../src/api/route";
import { ROUTES } from "../../../src/api/routes";
import type * as credentials from "../../../src/api/routes/credentials";
import type * as health from "../../../src/api/routes/health";
import type * as ingest from "../../../src/api/routes/events";
import type * as ops from "../../../src/api/routes/ops";
import type * as output from "../../../src/api/routes/output";
import type * as runs from "../../../src/api/routes/runs";
import type * as state from "../../../src/api/routes/state";
import type * as streams from "../../../src/api/routes/streams";
import type * as table from "../../../src/api/routes/table";
import type { Client } from "../../../src/client";
import {
  adviceSchema,
  publicationSchema,
  credentialCreatedSchema,
  credentialListSchema,
  healthSchema,
  healthzSchema,
  outcomeSchema,
  problemSchema,
  progressSchema,
  putStreamResultSchema,
  runSchema,
  runStartedSchema,
  statePageSchema,
  streamInfoSchema,
  streamListSchema,
  tableSnapshotSchema,
} from "../../../src/api/openapi";
import { at, call, client, createStream, json, post } from "../helpers";

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
      .filter((rt) => ["GET", "POST", "PUT", "PATCH", "DELETE"].includes(rt.method) && !rt.path.startsWith("/__"))
      .map((rt) => `${rt.method.toLowerCase()} ${rt.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m} ${path}`),
    );
    const declared = ROUTES.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
    expect(new Set(served).size).toBeGreaterThan(15);
    // A route served without a declaration in src/api/routes (an app.get() of its own, say) fails here.
    for (const route of served) expect(declared, `${route} is served but not declared in src/api/routes`).toContain(route);
    expect(new Set(declared).size).toBe(declared.length);
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
    const put = await client.putStream("oa2", {
      key: ["id"],
      eventTime: "ts",
      watermarkDelay: "5 minutes",
      partitions: 2,
      table: { format: "iceberg" },
      sources: { a: {} },
    });
    expect(put.status).toBe(201);
    holds(putStreamResultSchema, put.result);
    holds(
      putStreamResultSchema,
      (await client.putStream("oa2", { key: ["id"], eventTime: "ts", watermarkDelay: "6 minutes", partitions: 2, table: { format: "iceberg" } })).result,
    );
    await post(
      "oa2",
      [
        { id: "A", ts: at(10, 0) },
        { id: "B", ts: at(10, 1) },
      ],
      { "x-source": "a" },
    );
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

  it("holds each whole-number query parameter to the bounds the document publishes", async () => {
    await createStream("oa3", { key: ["id"], eventTime: "ts", watermarkDelay: "5 minutes", partitions: 2 });
    // A destination for …/destinations/{name}/dead (never sent to: this stream commits nothing).
    expect((await call("PUT", "/v1/streams/oa3/destinations/d", { type: "http", url: "https://example.com/hook" })).status).toBe(201);
    const doc = await json(call("GET", "/openapi.json", undefined, {}));
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(item)) {
        for (const p of (op.parameters ?? []) as any[]) {
          // With a default: the fixed bounds of intIn(…).default(…); ?partition='s bound is the stream's.
          if (p.in !== "query" || p.schema.type !== "integer" || p.schema.default === undefined) continue;
          const { minimum: min, maximum: max } = p.schema;
          // partition=0 for the state reader, which asks for a partition before it reads a limit; the others ignore it.
          const at = (v: number) => call(method.toUpperCase(), `${path.replace("{stream}", "oa3").replace("{name}", "d")}?partition=0&${p.name}=${v}`);
          for (const v of [min - 1, max + 1, min + 0.5]) {
            const r = await at(v);
            expect(r.status, `${method} ${path}?${p.name}=${v}`).toBe(400);
            expect((await r.json<any>()).detail).toBe(`${p.name} must be a whole number in ${min}..${max}`);
          }
          expect((await at(max)).status, `${method} ${path}?${p.name}=${max}`).toBe(200);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(7); // limit of streams, progress, state and the dead lane; after of the three lanes
  });

  it("gives the client the types of the schemas the routes declare (checked by npm run typecheck)", () => {
    type Got<K extends keyof Client> = Client[K] extends (...args: any[]) => Promise<infer T> ? T : never;
    expectTypeOf<Got<"listStreams">>().toEqualTypeOf<Answer<typeof streams.listStreams, 200>>();
    expectTypeOf<Got<"putStream">["result"]>().toEqualTypeOf<Answer<typeof streams.putStream, 201>>();
    expectTypeOf<Got<"getStream">>().toEqualTypeOf<Answer<typeof streams.getStream, 200>>();
    expectTypeOf<Got<"ingest">>().toEqualTypeOf<Answer<typeof ingest.postEvents, 200>>();
    expectTypeOf<Got<"progress">>().toEqualTypeOf<Answer<typeof ops.progress, 200>["progress"]>();
    expectTypeOf<Got<"health">>().toEqualTypeOf<Answer<typeof ops.health, 200>>();
    expectTypeOf<Got<"advice">>().toEqualTypeOf<Answer<typeof ops.advice, 200>>();
    expectTypeOf<Got<"state">>().toEqualTypeOf<Answer<typeof state.state, 200>>();
    expectTypeOf<Got<"startRun">>().toEqualTypeOf<Answer<typeof runs.startRun, 202>>();
    expectTypeOf<Got<"getRun">>().toEqualTypeOf<Answer<typeof runs.getRun, 200>>();
    expectTypeOf<Got<"createCredential">>().toEqualTypeOf<Answer<typeof credentials.createCredential, 201>>();
    expectTypeOf<Got<"listCredentials">>().toEqualTypeOf<Answer<typeof credentials.listCredentials, 200>["credentials"]>();
    expectTypeOf<Got<"table">>().toEqualTypeOf<Answer<typeof table.table, 200>>();
    expectTypeOf<Got<"healthz">>().toEqualTypeOf<Answer<typeof health.healthz, 200>>();
    // The options that are a query: the query the route declares.
    type Options<K extends keyof Client> = NonNullable<Parameters<Client[K]>[K extends "listStreams" ? 0 : 1]>;
    expectTypeOf<Options<"listStreams">>().toEqualTypeOf<QueryOf<typeof streams.listStreams>>();
    expectTypeOf<Options<"progress">>().toEqualTypeOf<QueryOf<typeof ops.progress>>();
    expectTypeOf<Pick<Options<"output">, "after">>().toEqualTypeOf<QueryOf<typeof output.output>>();
    // The state reader's by-partition form: its query, with the partition that the by-row form may leave out.
    type Flat<T> = { [K in keyof T]: T[K] };
    expectTypeOf<Exclude<Options<"state">, { row: unknown }>>().toEqualTypeOf<
      Flat<Omit<QueryOf<typeof state.state>, "row" | "partition" | "provider"> & { partition: number }>
    >();
    // …and its by-row form: the row, and the provider whose webhook it came through.
    expectTypeOf<Extract<Options<"state">, { row: unknown }>["provider"]>().toEqualTypeOf<QueryOf<typeof state.state>["provider"]>();
  });
});

import { z } from "zod";
import { PROVIDER_TYPES, PROVIDERS } from "../webhooks";
import { PATH_PARAMS, pathParams, TAGS, type Auth, type ResponseSpec, type Route } from "./route";
import { problemSchema } from "./schemas";

export * from "./schemas";
export { tableSnapshotSchema } from "./table-snapshot-schema";

/**
 * The HTTP contract as OpenAPI 3.1, served at GET /openapi.json and rendered
 * at GET /docs, derived from the route table (src/api/routes, one declaration
 * per operation: ./route.ts). Request bodies are the zod schemas the routes
 * validate with, converted by zod itself; every JSON response body is a zod
 * schema too (./schemas.ts), which the tests parse real responses with, so the
 * document can't promise a shape the service doesn't answer.
 */
const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

/** A query or header parameter of a route, from its field of the request's object. */
interface Param {
  name: string;
  description: string;
  required: boolean;
  schema: Record<string, unknown>;
}

/** The fields of a request's query or headers object, as parameters: the field's description said beside its schema, not in it. */
function params(shape: z.ZodObject | undefined): Param[] {
  return Object.entries(shape?.shape ?? {}).map(([name, field]) => {
    const { description = "", ...schema } = jsonSchema(field as z.ZodType) as Record<string, unknown> & { description?: string };
    return { name, description, required: !(field as z.ZodType).safeParse(undefined).success, schema };
  });
}

const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  public: [],
  admin: [{ admin: [] }],
  ingest: [{ admin: [] }, { "source-token": [] }, { signature: [] }],
  provider: PROVIDER_TYPES.map((type) => ({ [type]: [] })),
};

export function openApiDocument(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of routes) {
    const inPath = pathParams(op.path).map((name) => ({
      name,
      in: "path",
      required: true,
      description: PATH_PARAMS[name]!.description,
      schema: jsonSchema(PATH_PARAMS[name]!.schema),
    }));
    const parameters = [
      ...inPath,
      ...params(op.request?.query).map((p) => ({ name: p.name, in: "query", description: p.description, required: p.required, schema: p.schema })),
      ...params(op.request?.headers).map((p) => ({ name: p.name, in: "header", description: p.description, required: p.required, schema: p.schema })),
    ];
    const body = op.request?.body;
    const bodyContent = body
      ? Object.fromEntries([["application/json", { schema: jsonSchema(body) }], ...(op.request?.bodyMedia ?? []).map((m: string) => [m, {}])])
      : undefined;
    const responses = Object.fromEntries(
      Object.entries(op.responses as Record<string, ResponseSpec>).map(([status, r]) => [
        status,
        {
          description: r.description,
          ...(r.headers
            ? { headers: Object.fromEntries(Object.entries(r.headers).map(([name, description]) => [name, { description, schema: { type: "string" } }])) }
            : {}),
          ...(status === "204" ? {} : { content: { [r.media ?? "application/json"]: r.schema ? { schema: jsonSchema(r.schema) } : {} } }),
        },
      ]),
    );
    (paths[openApiPath(op.path)] ??= {})[op.method] = {
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      ...(parameters.length > 0 ? { parameters } : {}),
      security: SECURITY[op.auth],
      ...(bodyContent ? { requestBody: { required: true, content: bodyContent } } : {}),
      responses: {
        ...responses,
        default: { description: "a problem (RFC 9457)", content: { "application/problem+json": { schema: jsonSchema(problemSchema) } } },
      },
    };
  }
  const providerSchemes = Object.fromEntries(
    PROVIDER_TYPES.map((type) => [
      type,
      {
        type: "apiKey",
        in: "header",
        name: PROVIDERS[type].signatureHeader,
        description: `${type}'s own signature, checked against the source's ${type} credential`,
      },
    ]),
  );
  return {
    openapi: "3.1.0",
    info: { title: "edge-dedup", version: "1", description: "Streaming deduplication on Cloudflare Workers: Spark's dropDuplicates at the edge." },
    tags: Object.entries(TAGS as Record<string, string>).map(([name, description]) => ({ name, description })),
    components: {
      securitySchemes: {
        admin: { type: "http", scheme: "bearer", description: "the admin token (the ADMIN_TOKEN secret)" },
        "source-token": { type: "http", scheme: "bearer", description: "a token credential of the batch's source" },
        signature: {
          type: "apiKey",
          in: "header",
          name: "X-Signature",
          description: "an hmac credential of the batch's source: t=<unix seconds>,v2=<hex HMAC-SHA256 of the signed text>",
        },
        ...providerSchemes,
      },
    },
    paths,
  };
}

/** A page that lists the operations from the document (no scripts, no external assets). */
export function docsPage(routes: readonly Route[]): string {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
  const rows = routes
    .map((op) => {
      const body = op.request?.body
        ? `<details><summary>request body</summary><pre>${esc(JSON.stringify(jsonSchema(op.request.body), null, 2))}</pre></details>`
        : "";
      const [status, ok] = Object.entries(op.responses as Record<string, ResponseSpec>)[0]!;
      const okBody = ok.schema ? `<details><summary>${status} body</summary><pre>${esc(JSON.stringify(jsonSchema(ok.schema), null, 2))}</pre></details>` : "";
      const described = op.description ? `<br>${esc(op.description)}` : "";
      const listed: [string, Param][] = [
        ...params(op.request?.query).map((p): [string, Param] => [`?${p.name}`, p]),
        ...params(op.request?.headers).map((p): [string, Param] => [`${p.name}:`, p]),
      ];
      const paramList = listed.length > 0 ? `<ul>${listed.map(([name, p]) => `<li><code>${esc(name)}</code> ${esc(p.description)}</li>`).join("")}</ul>` : "";
      return `<tr><td><code>${op.method.toUpperCase()}</code></td><td><code>${esc(openApiPath(op.path))}</code></td><td>${esc(op.summary)}${described}${paramList}${body}${okBody}</td><td>${op.auth}</td><td>${status}: ${esc(ok.description)}</td></tr>`;
    })
    .join("\n");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>edge-dedup API</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem;max-width:75rem}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}pre{font-size:12px;background:#f6f6f6;padding:.5rem;overflow:auto}</style>
</head><body><h1>edge-dedup API</h1><p>The contract as <a href="/openapi.json">OpenAPI 3.1</a>. Errors are <code>application/problem+json</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what</th><th>auth</th><th>answers</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}

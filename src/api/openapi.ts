import { z } from "zod";
import { runBody } from "../sources/files/routes";
import { streamBodySchema } from "../stream/config";
import { credentialBody } from "./credentials";
import {
  credentialCreatedSchema, credentialListSchema, healthSchema, healthzSchema, outcomeSchema, problemSchema, progressSchema, putStreamResultSchema,
  runSchema, runStartedSchema, statePageSchema, streamInfoSchema, streamListSchema, tableSnapshotSchema,
} from "./schemas";

export * from "./schemas";

/**
 * The HTTP contract as OpenAPI 3.1, served at GET /openapi.json and rendered
 * at GET /docs. Request bodies are the zod schemas the routes validate with
 * (streamBodySchema, the credential and run bodies), converted by zod itself;
 * every JSON response body is a zod schema too (./schemas.ts), which the tests
 * parse real responses with, so the document can't promise a shape the
 * service doesn't answer. A test checks that every route of the app is in the document.
 */
type Method = "get" | "put" | "post" | "delete";
interface Operation {
  method: Method;
  /** Hono's path syntax (`:stream`) */
  path: string;
  summary: string;
  tag: string;
  auth: "admin" | "ingest" | "provider" | "none";
  body?: z.ZodType;
  /** the success response: a zod schema, or a media type and what it holds */
  ok: { status: number; schema?: z.ZodType; media?: string; description: string };
}

const S = "/v1/streams/:stream";
export const OPERATIONS: readonly Operation[] = [
  { method: "get", path: "/v1/streams", summary: "The streams by name, with watermark and state size", tag: "streams", auth: "admin", ok: { status: 200, schema: streamListSchema, description: "a page of streams; next: the name to pass as ?after=" } },
  { method: "put", path: S, summary: "Create or update a stream", tag: "streams", auth: "admin", body: streamBodySchema, ok: { status: 201, schema: putStreamResultSchema, description: "created; 200 when updated or unchanged" } },
  { method: "get", path: S, summary: "A stream's config, watermark, sources and state", tag: "streams", auth: "admin", ok: { status: 200, schema: streamInfoSchema, description: "the stream" } },
  { method: "delete", path: S, summary: "Delete a stream: state, ledger, output, table", tag: "streams", auth: "admin", ok: { status: 204, description: "deleted" } },
  { method: "post", path: `${S}/events`, summary: "Ingest one batch (JSON object, array or NDJSON)", tag: "ingest", auth: "ingest", ok: { status: 200, schema: outcomeSchema, description: "the batch's outcome (replayed: true for a committed batch id)" } },
  { method: "post", path: `${S}/sources/:source/webhook`, summary: "A provider's webhook delivery (Stripe, GitHub, Shopify, Standard Webhooks)", tag: "ingest", auth: "provider", ok: { status: 200, schema: outcomeSchema, description: "the delivery's outcome" } },
  { method: "post", path: `${S}/runs`, summary: "Ingest every object under a prefix of the INPUT bucket not ingested yet", tag: "sources", auth: "admin", body: runBody, ok: { status: 202, schema: runStartedSchema, description: "started; Location: the run" } },
  { method: "get", path: `${S}/runs/:id`, summary: "A run's status and counts", tag: "sources", auth: "admin", ok: { status: 200, schema: runSchema, description: "the run" } },
  { method: "get", path: `${S}/output`, summary: "Committed output rows in commit order (?after=seq)", tag: "output", auth: "admin", ok: { status: 200, media: "application/x-ndjson", description: "rows; X-Commit-Seq says where to resume" } },
  { method: "get", path: `${S}/late`, summary: "The late lane (?after=seq)", tag: "output", auth: "admin", ok: { status: 200, media: "application/x-ndjson", description: "late rows with the watermark they met" } },
  { method: "get", path: `${S}/rejected`, summary: "The rejected lane (?after=seq)", tag: "output", auth: "admin", ok: { status: 200, media: "application/x-ndjson", description: "rejected rows as sent, with the error" } },
  { method: "get", path: `${S}/table`, summary: "The Iceberg table's current snapshot", tag: "output", auth: "admin", ok: { status: 200, schema: tableSnapshotSchema, description: "the current snapshot" } },
  { method: "get", path: `${S}/progress`, summary: "Recent per-batch progress reports (?limit)", tag: "operate", auth: "admin", ok: { status: 200, schema: progressSchema, description: "oldest first" } },
  { method: "get", path: `${S}/state`, summary: "The keys one partition remembers (?partition, limit, after)", tag: "operate", auth: "admin", ok: { status: 200, schema: statePageSchema, description: "a page of the partition's keys" } },
  { method: "get", path: `${S}/health`, summary: "ok | warn | critical, with reasons and the source holding the watermark back", tag: "operate", auth: "admin", ok: { status: 200, schema: healthSchema, description: "the stream's health" } },
  { method: "post", path: `${S}/sources/:source/credentials`, summary: "Create a source credential; its secret is shown once", tag: "credentials", auth: "admin", body: credentialBody, ok: { status: 201, schema: credentialCreatedSchema, description: "the credential with its secret" } },
  { method: "get", path: `${S}/sources/:source/credentials`, summary: "A source's credentials, without secrets", tag: "credentials", auth: "admin", ok: { status: 200, schema: credentialListSchema, description: "without secrets" } },
  { method: "delete", path: `${S}/sources/:source/credentials/:id`, summary: "Revoke a credential", tag: "credentials", auth: "admin", ok: { status: 204, description: "revoked" } },
  { method: "get", path: "/metrics", summary: "Prometheus text exposition of every stream", tag: "operate", auth: "admin", ok: { status: 200, media: "text/plain", description: "counters and gauges" } },
  { method: "get", path: "/healthz", summary: "Liveness of the Worker and its bindings", tag: "operate", auth: "none", ok: { status: 200, schema: healthzSchema, description: "live" } },
  { method: "get", path: "/openapi.json", summary: "This document", tag: "operate", auth: "none", ok: { status: 200, description: "OpenAPI 3.1" } },
  { method: "get", path: "/docs", summary: "This document, as a page", tag: "operate", auth: "none", ok: { status: 200, media: "text/html", description: "HTML" } },
  { method: "get", path: "/dashboard", summary: "The operator's dashboard (a static page; it calls /v1 with the admin token typed into it)", tag: "operate", auth: "none", ok: { status: 200, media: "text/html", description: "HTML" } },
];

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const params = [...op.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    (paths[openApiPath(op.path)] ??= {})[op.method] = {
      summary: op.summary,
      tags: [op.tag],
      ...(params.length > 0 ? { parameters: params } : {}),
      security: op.auth === "none" || op.auth === "provider" ? [] : op.auth === "ingest" ? [{ bearer: [] }, { signature: [] }] : [{ bearer: [] }],
      ...(op.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(op.body) } } } } : {}),
      responses: {
        [op.ok.status]: {
          description: op.ok.description,
          ...(op.ok.status === 204 ? {} : { content: { [op.ok.media ?? "application/json"]: op.ok.schema ? { schema: jsonSchema(op.ok.schema) } : {} } }),
        },
        default: { description: "a problem (RFC 9457)", content: { "application/problem+json": { schema: jsonSchema(problemSchema) } } },
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "edge-dedup", version: "1", description: "Streaming deduplication on Cloudflare Workers: Spark's dropDuplicates at the edge." },
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "the admin token, or a source's token (ingest)" },
        signature: { type: "apiKey", in: "header", name: "X-Signature", description: "t=<unix seconds>,v2=<hex HMAC-SHA256 of the signed text>" },
      },
    },
    paths,
  };
}

/** A page that lists the operations from the document (no scripts, no external assets). */
export function docsPage(): string {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
  const rows = OPERATIONS.map((op) => {
    const body = op.body ? `<details><summary>request body</summary><pre>${esc(JSON.stringify(jsonSchema(op.body), null, 2))}</pre></details>` : "";
    const ok = op.ok.schema ? `<details><summary>${op.ok.status} body</summary><pre>${esc(JSON.stringify(jsonSchema(op.ok.schema), null, 2))}</pre></details>` : "";
    return `<tr><td><code>${op.method.toUpperCase()}</code></td><td><code>${esc(openApiPath(op.path))}</code></td><td>${esc(op.summary)}${body}${ok}</td><td>${op.auth}</td><td>${op.ok.status}: ${esc(op.ok.description)}</td></tr>`;
  }).join("\n");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>edge-dedup API</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem;max-width:75rem}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}pre{font-size:12px;background:#f6f6f6;padding:.5rem;overflow:auto}</style>
</head><body><h1>edge-dedup API</h1><p>The contract as <a href="/openapi.json">OpenAPI 3.1</a>. Errors are <code>application/problem+json</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what</th><th>auth</th><th>answers</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}

import { z } from "zod";
import { runBody } from "../sources/files/run-body";
import { NAME_PATTERN, streamBodySchema } from "../stream/config";
import { PROVIDERS, PROVIDER_TYPES } from "../webhooks";
import { credentialBody } from "./credentials";
import {
  adviceSchema, credentialCreatedSchema, credentialListSchema, healthSchema, healthzSchema, outcomeSchema, problemSchema, progressSchema, putStreamResultSchema,
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
/** A query or header parameter: its schema's JSON Schema (default, bounds) is published with it. */
interface Param {
  name: string;
  description: string;
  schema: z.ZodType;
  required?: boolean;
}
interface Operation {
  method: Method;
  /** Hono's path syntax (`:stream`) */
  path: string;
  summary: string;
  /** what the summary leaves out: status codes, limits, where to read more */
  description?: string;
  tag: string;
  auth: "admin" | "ingest" | "provider" | "none";
  query?: Param[];
  headers?: Param[];
  body?: z.ZodType;
  /** media types the body may also come as, besides application/json */
  bodyMedia?: string[];
  /** the success response: a zod schema, or a media type and what it holds; headers by name, with what they say */
  ok: { status: number; schema?: z.ZodType; media?: string; description: string; headers?: Record<string, string> };
}

/** The document's tags, in the order the reference lists them. */
const TAGS: Record<string, string> = {
  streams: "Create, read and delete streams (admin).",
  ingest: "Send batches: your own producers, or a provider's webhooks.",
  credentials: "Per-source credentials for ingest and webhooks.",
  sources: "Files in the INPUT bucket, ingested by a run.",
  output: "What the service wrote: the output, the late and rejected lanes, the table.",
  operate: "Progress, state, health, metrics, and this contract.",
};

const intIn = (min: number, max: number) => z.number().int().min(min).max(max);
/** ?after= of the NDJSON lanes: X-Commit-Seq of the last read says where to resume. */
const afterSeq: Param = { name: "after", description: "the commit seq to read after (the X-Commit-Seq of the last read); 0 reads from the start", schema: intIn(0, Number.MAX_SAFE_INTEGER).default(0) };
const commitSeqHeader = { "X-Commit-Seq": "the last commit this read covers: pass it as ?after= to read on" };

const S = "/v1/streams/:stream";
export const OPERATIONS: readonly Operation[] = [
  {
    method: "get", path: "/v1/streams", summary: "The streams by name, with watermark and state size", tag: "streams", auth: "admin",
    description: "Each stream with `createdAt`, `watermark`, `state` (rows, bytes, as the partitions last reported) and its committed batch count.",
    query: [
      { name: "limit", description: "streams per page", schema: intIn(1, 100).default(100) },
      { name: "after", description: "the stream name to list after: the `next` of the previous page", schema: z.string() },
    ],
    ok: { status: 200, schema: streamListSchema, description: "{streams, next}; `next` is null on the last page" },
  },
  {
    method: "put", path: S, summary: "Create or update a stream", tag: "streams", auth: "admin", body: streamBodySchema,
    description: "The whole config every time: fields left out take their defaults (not a patch). A changed bound field (`key`, `mode`, `eventTime`, `partitions`, `stateKeys`, a key column's type) is a 409 `bound-field-changed`; an invalid config a 400.",
    ok: { status: 201, schema: putStreamResultSchema, description: "{stream, status, config}; 200 when updated or unchanged (`status` `updated` or `unchanged`)" },
  },
  { method: "get", path: S, summary: "A stream's config, watermark, sources and state", tag: "streams", auth: "admin", description: "With its state size and committed batch count.", ok: { status: 200, schema: streamInfoSchema, description: "the stream" } },
  { method: "delete", path: S, summary: "Delete a stream: state, ledger, output, table", tag: "streams", auth: "admin", description: "Like deleting a Spark checkpoint.", ok: { status: 204, description: "deleted" } },
  {
    method: "post", path: `${S}/events`, summary: "Ingest one batch (JSON object, array or NDJSON)", tag: "ingest", auth: "ingest",
    description: "Retrying with the same body, `Idempotency-Key` and `X-Source` is always safe. A body that can't be parsed is a 400 and changes nothing; rows that fail validation are rejected by index and the rest goes ahead.",
    headers: [
      { name: "X-Source", description: "the batch's source", schema: z.string().regex(NAME_PATTERN).default("default") },
      { name: "Idempotency-Key", description: "the batch id, scoped per source; generated (and answered in the response header) when left out", schema: z.string().regex(/^[\x21-\x7e]{1,255}$/) },
      { name: "Content-Type", description: "`application/x-ndjson` (or `application/jsonl`, `application/x-jsonlines`) for NDJSON; anything else is parsed as JSON", schema: z.string() },
    ],
    body: z.union([z.record(z.string(), z.unknown()), z.array(z.record(z.string(), z.unknown()))]).describe("one row, or an array of rows"),
    bodyMedia: ["application/x-ndjson"],
    ok: { status: 200, schema: outcomeSchema, description: "the batch's outcome (replayed: true for a committed batch id)", headers: { "Idempotency-Key": "the batch id" } },
  },
  { method: "post", path: `${S}/sources/:source/webhook`, summary: "A provider's webhook delivery (Stripe, GitHub, Shopify, Standard Webhooks)", tag: "ingest", auth: "provider", description: "Verified by the source's provider credential; one delivery is one envelope row, and a redelivery replays.", ok: { status: 200, schema: outcomeSchema, description: "the delivery's outcome", headers: { "Idempotency-Key": "the batch id, derived from the delivery id" } } },
  { method: "post", path: `${S}/runs`, summary: "Ingest every object under a prefix of the INPUT bucket not ingested yet", tag: "sources", auth: "admin", description: "JSON and NDJSON objects; `source` defaults to `files`.", body: runBody, ok: { status: 202, schema: runStartedSchema, description: "{id, stream, prefix, source}", headers: { Location: "the run: GET it for its status" } } },
  { method: "get", path: `${S}/runs/:id`, summary: "A run's status and counts", tag: "sources", auth: "admin", description: "Files done, left, skipped and failed, row counts and the first errors.", ok: { status: 200, schema: runSchema, description: "the run" } },
  { method: "get", path: `${S}/output`, summary: "Committed output rows in commit order", tag: "output", auth: "admin", query: [afterSeq], ok: { status: 200, media: "application/x-ndjson", description: "rows", headers: commitSeqHeader } },
  { method: "get", path: `${S}/late`, summary: "The late lane: rows dropped by the watermark", tag: "output", auth: "admin", query: [afterSeq], ok: { status: 200, media: "application/x-ndjson", description: "late rows with the watermark they met", headers: commitSeqHeader } },
  { method: "get", path: `${S}/rejected`, summary: "The rejected lane: rows that failed validation", tag: "output", auth: "admin", query: [afterSeq], ok: { status: 200, media: "application/x-ndjson", description: "rejected rows as sent, with the error", headers: commitSeqHeader } },
  { method: "get", path: `${S}/conflicts`, summary: "The conflicts lane: copies of a remembered id whose content differs from the kept copy's", tag: "output", auth: "admin", query: [afterSeq], description: "One line each: `{batchId, source, index, verdict: dropped | rejected, kept: {batchId, source, seq}, row}`; volatile fields are ignored when comparing.", ok: { status: 200, media: "application/x-ndjson", description: "conflicting rows with the kept copy's reference", headers: commitSeqHeader } },
  { method: "get", path: `${S}/duplicates`, summary: "The duplicates lane: every dropped copy, with keepDuplicates", tag: "output", auth: "admin", query: [afterSeq], description: "One line each: `{batchId, source, index, kept: {batchId, source, seq}, row}`; empty unless the stream has `\"keepDuplicates\": true`.", ok: { status: 200, media: "application/x-ndjson", description: "dropped copies with the kept copy's reference", headers: commitSeqHeader } },
  { method: "get", path: `${S}/table`, summary: "The Iceberg table's current snapshot", tag: "output", auth: "admin", description: "404 when the stream has no table or no snapshot yet.", ok: { status: 200, schema: tableSnapshotSchema, description: "{stream, metadataLocation, snapshot}" } },
  {
    method: "get", path: `${S}/progress`, summary: "Recent per-batch progress reports", tag: "operate", auth: "admin",
    query: [{ name: "limit", description: "how many of the most recent reports", schema: intIn(1, 1000).default(100) }],
    ok: { status: 200, schema: progressSchema, description: "oldest first" },
  },
  {
    method: "get", path: `${S}/state`, summary: "The keys one partition remembers", tag: "operate", auth: "admin",
    description: "Each key with its `expiresAt`, like Spark's state reader. A stream with `stateKeys: \"hashed\"` lists `#` and the key's 64-bit hash in hex.",
    query: [
      { name: "partition", description: "the partition: 0 to the stream's `partitions` - 1; required unless `row` is given", schema: z.number().int().min(0) },
      { name: "limit", description: "keys per page", schema: intIn(1, 10_000).default(1000) },
      { name: "after", description: "the key to list after: the last key of the previous page", schema: z.string() },
      {
        name: "row",
        description: "a row as JSON, as ingest would take it (key columns and event time): lists just its key, if remembered, from the partition it routes to (`partition` may then be left out); how a stream with hashed keys is asked about one key",
        schema: z.string(),
      },
    ],
    ok: { status: 200, schema: statePageSchema, description: "{partition, watermark, rows, bytes, keys}" },
  },
  { method: "get", path: `${S}/advice`, summary: "The delay advisor, live: duplicate gaps and disorder per source, the recommended watermarkDelay", tag: "operate", auth: "admin", description: "The figures `edge-dedup advise` computes over a file, kept by the stream at each commit.", ok: { status: 200, schema: adviceSchema, description: "per source and overall" } },
  { method: "get", path: `${S}/health`, summary: "ok | warn | critical, with reasons and the source holding the watermark back", tag: "operate", auth: "admin", description: "`status`, `reasons`, `heldBackBy` and the figures behind them.", ok: { status: 200, schema: healthSchema, description: "the stream's health" } },
  { method: "post", path: `${S}/sources/:source/credentials`, summary: "Create a source credential; its secret is shown once", tag: "credentials", auth: "admin", description: "The provider types need the provider's `secret`; `token` and `hmac` get a generated one when it is left out.", body: credentialBody, ok: { status: 201, schema: credentialCreatedSchema, description: "the credential with its secret" } },
  { method: "get", path: `${S}/sources/:source/credentials`, summary: "A source's credentials, without secrets", tag: "credentials", auth: "admin", ok: { status: 200, schema: credentialListSchema, description: "{credentials}" } },
  { method: "delete", path: `${S}/sources/:source/credentials/:id`, summary: "Revoke a credential", tag: "credentials", auth: "admin", description: "At once.", ok: { status: 204, description: "revoked" } },
  { method: "get", path: "/metrics", summary: "Prometheus text exposition of every stream", tag: "operate", auth: "admin", ok: { status: 200, media: "text/plain", description: "counters and gauges" } },
  { method: "get", path: "/healthz", summary: "Liveness of the Worker and its bindings", tag: "operate", auth: "none", description: "200 when the Worker, the registry Durable Object and R2 answer; 503 problem+json otherwise, without details.", ok: { status: 200, schema: healthzSchema, description: '{"status":"ok"}' } },
  { method: "get", path: "/openapi.json", summary: "This document", tag: "operate", auth: "none", ok: { status: 200, description: "OpenAPI 3.1" } },
  { method: "get", path: "/docs", summary: "This document, as a page", tag: "operate", auth: "none", ok: { status: 200, media: "text/html", description: "HTML" } },
  { method: "get", path: "/dashboard", summary: "The operator's dashboard (a static page; it calls /v1 with the admin token typed into it)", tag: "operate", auth: "none", ok: { status: 200, media: "text/html", description: "HTML" } },
];

const PATH_PARAMS: Record<string, { description: string; schema: Record<string, unknown> }> = {
  stream: { description: "the stream's name", schema: { type: "string", pattern: NAME_PATTERN.source } },
  source: { description: "the source's name", schema: { type: "string", pattern: NAME_PATTERN.source } },
  id: { description: "the id its creation answered", schema: { type: "string" } },
};

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

const SECURITY: Record<Operation["auth"], Record<string, string[]>[]> = {
  none: [],
  admin: [{ admin: [] }],
  ingest: [{ admin: [] }, { "source-token": [] }, { signature: [] }],
  provider: PROVIDER_TYPES.map((type) => ({ [type]: [] })),
};

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const param = (where: "query" | "header") => (p: Param) => ({ name: p.name, in: where, description: p.description, required: p.required ?? false, schema: jsonSchema(p.schema) });
    const params = [
      ...[...op.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, ...PATH_PARAMS[m[1]!] })),
      ...(op.query ?? []).map(param("query")),
      ...(op.headers ?? []).map(param("header")),
    ];
    const bodyContent = op.body
      ? Object.fromEntries([["application/json", { schema: jsonSchema(op.body) }], ...(op.bodyMedia ?? []).map((m) => [m, {}])])
      : undefined;
    (paths[openApiPath(op.path)] ??= {})[op.method] = {
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      ...(params.length > 0 ? { parameters: params } : {}),
      security: SECURITY[op.auth],
      ...(bodyContent ? { requestBody: { required: true, content: bodyContent } } : {}),
      responses: {
        [op.ok.status]: {
          description: op.ok.description,
          ...(op.ok.headers ? { headers: Object.fromEntries(Object.entries(op.ok.headers).map(([name, description]) => [name, { description, schema: { type: "string" } }])) } : {}),
          ...(op.ok.status === 204 ? {} : { content: { [op.ok.media ?? "application/json"]: op.ok.schema ? { schema: jsonSchema(op.ok.schema) } : {} } }),
        },
        default: { description: "a problem (RFC 9457)", content: { "application/problem+json": { schema: jsonSchema(problemSchema) } } },
      },
    };
  }
  const providerSchemes = Object.fromEntries(PROVIDER_TYPES.map((type) => [type, {
    type: "apiKey", in: "header", name: PROVIDERS[type].signatureHeader,
    description: `${type}'s own signature, checked against the source's ${type} credential`,
  }]));
  return {
    openapi: "3.1.0",
    info: { title: "edge-dedup", version: "1", description: "Streaming deduplication on Cloudflare Workers: Spark's dropDuplicates at the edge." },
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    components: {
      securitySchemes: {
        admin: { type: "http", scheme: "bearer", description: "the admin token (the ADMIN_TOKEN secret)" },
        "source-token": { type: "http", scheme: "bearer", description: "a token credential of the batch's source" },
        signature: { type: "apiKey", in: "header", name: "X-Signature", description: "an hmac credential of the batch's source: t=<unix seconds>,v2=<hex HMAC-SHA256 of the signed text>" },
        ...providerSchemes,
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
    const described = op.description ? `<br>${esc(op.description)}` : "";
    const params: [string, Param][] = [...(op.query ?? []).map((p): [string, Param] => [`?${p.name}`, p]), ...(op.headers ?? []).map((p): [string, Param] => [`${p.name}:`, p])];
    const paramList = params.length > 0 ? `<ul>${params.map(([name, p]) => `<li><code>${esc(name)}</code> ${esc(p.description)}</li>`).join("")}</ul>` : "";
    return `<tr><td><code>${op.method.toUpperCase()}</code></td><td><code>${esc(openApiPath(op.path))}</code></td><td>${esc(op.summary)}${described}${paramList}${body}${ok}</td><td>${op.auth}</td><td>${op.ok.status}: ${esc(op.ok.description)}</td></tr>`;
  }).join("\n");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>edge-dedup API</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem;max-width:75rem}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}pre{font-size:12px;background:#f6f6f6;padding:.5rem;overflow:auto}</style>
</head><body><h1>edge-dedup API</h1><p>The contract as <a href="/openapi.json">OpenAPI 3.1</a>. Errors are <code>application/problem+json</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what</th><th>auth</th><th>answers</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}

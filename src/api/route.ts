import type { Context, Hono, MiddlewareHandler, TypedResponse } from "hono";
import type { StatusCode } from "hono/utils/http-status";
import { z } from "zod";
import type { Env } from "../env";
import { NAME_PATTERN, NAME_RULE } from "../stream/name-rule";
import { requireIngestCredential } from "./admission";
import { requireAdmin } from "./auth";
import { badRequest, HttpError } from "../http/problem";
import { requireProviderSignature } from "./webhook";

/**
 * One declaration per operation (docs/design.md#one-contract): method, path,
 * who may call, what it takes and what it answers, beside its handler in
 * src/api/routes/. From the table of them (src/api/routes/index.ts) come the
 * Hono routes and their auth (mount()), the 405 answers, /openapi.json and
 * /docs (./openapi.ts), docs/reference/http-api.md and the client's types (the
 * same zod schemas, ./schemas.ts). Not @hono/zod-openapi: its validators read
 * the body before the handler runs, while ingest and webhooks admit the caller
 * from its headers first and read the raw bytes within limits themselves.
 */
export type App = { Bindings: Env; Variables: { stream: string } };
export type Ctx = Context<App>;

export const METHODS = ["get", "put", "post", "patch", "delete"] as const;
export type Method = (typeof METHODS)[number];

/**
 * Who may call. Each kind's gate runs first, before the path's names are
 * validated or anything else is looked at, so a caller without a credential
 * learns nothing of a route but that it needs one; the handler of an ingest
 * or webhook route then admits the caller fully (./admission.ts), from its
 * headers, before it reads the body.
 */
export const AUTH = {
  /** no credential: nothing behind it is data */
  public: null,
  /** the admin token */
  admin: (c: Ctx) => requireAdmin(c.req.header("authorization"), c.env),
  /** the admin token, a source's token or an X-Signature (the gate: one of them is sent; ingest() checks which) */
  ingest: (c: Ctx) => requireIngestCredential(c.env, c.req.raw.headers),
  /** a provider's own signature (the gate: a signature header is sent; webhook() verifies it) */
  provider: async (c: Ctx) => requireProviderSignature(c.req.raw.headers),
} satisfies Record<string, ((c: Ctx) => Promise<void>) | null>;
export type Auth = keyof typeof AUTH;

/** The document's tags, in the order the reference lists them. */
export const TAGS = {
  streams: "Create, read and delete streams (admin).",
  ingest: "Send batches: your own producers, or a provider's webhooks.",
  credentials: "Per-source credentials for ingest and webhooks.",
  sources: "Files in the INPUT bucket, ingested by a run.",
  delivery: "Destinations: each output row pushed to your handler (Standard Webhooks) or a queue.",
  output: "What the service wrote: the output, the late and rejected lanes, the table.",
  operate: "Progress, state, health, metrics, and this contract.",
} as const;
export type Tag = keyof typeof TAGS;

interface PathParam {
  description: string;
  schema: z.ZodType;
  /** the 400's detail when a value does not fit; none: any value goes */
  invalid?: (value: string) => string;
}

/** Every name a path may hold (`:stream`), declared once: a path naming another is refused by route(). */
export const PATH_PARAMS: Record<string, PathParam> = {
  stream: {
    description: "the stream's name",
    schema: z.string().regex(NAME_PATTERN),
    invalid: (v) => `stream name "${v}" is invalid: ${NAME_RULE}`,
  },
  source: {
    description: "the source's name",
    schema: z.string().regex(NAME_PATTERN),
    invalid: () => `source name is invalid: ${NAME_RULE}`,
  },
  id: { description: "the id its creation answered", schema: z.string() },
  name: {
    description: "the destination's name",
    schema: z.string().regex(NAME_PATTERN),
    invalid: (v) => `destination name "${v}" is invalid: ${NAME_RULE}`,
  },
};

export interface ResponseSpec {
  description: string;
  /** a JSON body's schema (./schemas.ts) */
  schema?: z.ZodType;
  /** a body that is not JSON: its media type */
  media?: string;
  /** headers by name, with what they say */
  headers?: Record<string, string>;
}

export interface RequestSpec {
  /** one field per query parameter; `.describe()` says what it is, `.optional()`/`.default()` that it may be left out */
  query?: z.ZodObject;
  /** one field per header, as query */
  headers?: z.ZodObject;
  /** the JSON body: the schema the handler validates with */
  body?: z.ZodType;
  /** media types the body may also come as, besides application/json */
  bodyMedia?: string[];
}

/** `Route` alone is any route (the table's element type). */
export interface Route<Responses extends Record<number, ResponseSpec> = any, Request extends RequestSpec = any> {
  method: Method;
  /** Hono's path syntax (`:stream`) */
  path: string;
  summary: string;
  /** what the summary leaves out: status codes, limits, where to read more */
  description?: string;
  tag: Tag;
  auth: Auth;
  request?: Request;
  /** the success answers by status (errors are problem+json, from ./problem.ts) */
  responses: Responses;
  handler: (c: Ctx) => Answered<Responses> | Promise<Answered<Responses>>;
}

/** The JSON a route's schemas describe, over all its statuses (never: it answers no JSON). */
type JsonOf<Responses> = { [S in keyof Responses]: Responses[S] extends { schema: infer T extends z.ZodType } ? z.output<T> : never }[keyof Responses];

/**
 * What a handler may return: a route that answers JSON answers c.json() of a
 * value of its schema's type (the compiler holds the handler to its
 * declaration; errors are thrown, as HttpError); others any Response.
 */
type Answered<Responses> = [JsonOf<Responses>] extends [never] ? Response : Response & TypedResponse<JsonOf<Responses>, StatusCode, "json">;

/** Declares an operation; the path's names must be in PATH_PARAMS. */
export function route<const Responses extends Record<number, ResponseSpec>, const Request extends RequestSpec = RequestSpec>(
  r: Route<Responses, Request>,
): Route<Responses, Request> {
  for (const name of pathParams(r.path)) {
    if (!(name in PATH_PARAMS)) throw new Error(`${r.method.toUpperCase()} ${r.path}: :${name} is not in PATH_PARAMS (src/api/route.ts)`);
  }
  return r;
}

/** The JSON a route answers with `status`, by its schema: what the client's types are made of. */
/** The query a route takes, by its declaration: what the client's options are made of. */
export type QueryOf<R extends Route> = NonNullable<R["request"]> extends { query: infer Q extends z.ZodType } ? z.input<Q> : never;

export type Answer<R extends Route<any>, S extends keyof R["responses"]> = R["responses"][S] extends { schema: infer T extends z.ZodType } ? z.infer<T> : never;

export const pathParams = (path: string): string[] => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);

/** The names in the path, checked in order; `stream` is kept for the handler (c.get("stream")). */
export function checkParams(path: string): MiddlewareHandler<App> {
  const checked = pathParams(path).filter((name) => PATH_PARAMS[name]!.invalid);
  return async (c, next) => {
    for (const name of checked) {
      const { schema, invalid } = PATH_PARAMS[name]!;
      const value = c.req.param(name) ?? "";
      if (!schema.safeParse(value).success) throw badRequest(invalid!(value));
    }
    if (checked.includes("stream")) c.set("stream", c.req.param("stream")!);
    await next();
  };
}

/** Mounts each route behind its auth's gate and its path's checks. */
export function mount(app: Hono<App>, routes: readonly Route[]): void {
  for (const r of routes) {
    const gate = AUTH[r.auth];
    const guard: MiddlewareHandler<App> = async (c, next) => {
      if (gate) await gate(c);
      await next();
    };
    app.on(r.method.toUpperCase(), r.path, guard, checkParams(r.path), (c) => r.handler(c));
  }
}

/** Each declared path with the methods it has, as an Allow header says them. */
export function allowedMethods(routes: readonly Route[]): Map<string, string> {
  const byPath = new Map<string, Set<Method>>();
  for (const r of routes) (byPath.get(r.path) ?? byPath.set(r.path, new Set()).get(r.path)!).add(r.method);
  return new Map(
    [...byPath].map(([path, methods]) => [
      path,
      METHODS.filter((m) => methods.has(m))
        .map((m) => m.toUpperCase())
        .join(", "),
    ]),
  );
}

/** A declared path with another method: a 405 that says what is allowed. */
export function mountMethodNotAllowed(app: Hono<App>, routes: readonly Route[]): void {
  for (const [path, allow] of allowedMethods(routes)) {
    app.all(path, () => {
      throw new HttpError(405, "method-not-allowed", "Method not allowed", `allowed: ${allow}`, {}, { allow });
    });
  }
}

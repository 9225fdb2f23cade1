/**
 * The typed client of the v1 HTTP API (DESIGN §4), exported as
 * `edge-dedup/client`. Only fetch: it runs in Node 22 (the CLI, the bench,
 * the end-to-end tests) and in workerd (the integration tests, a producer's
 * Worker). Its types are the schemas the routes declare (src/api/routes):
 * the response schemas' (src/api/schemas.ts) and the request bodies', imported
 * as types only, so the client carries no zod; it does not parse answers with
 * them at run time either: test/integration/api/openapi.test.ts holds the schemas
 * to what the service answers, and a caller gets the service's JSON as sent.
 */
import type {
  Advice,
  CreatedCredential,
  Credential,
  CredentialList,
  Health,
  Healthz,
  Outcome,
  PartitionState,
  Problem,
  Progress,
  ProgressReport,
  Publication,
  PutStreamResult,
  Rescale,
  Reshard,
  Run,
  RunStarted,
  StreamInfo,
  StreamList,
  TableSnapshot,
} from "../api/schemas.ts";
import type { credentialBody } from "../credentials/credential.ts";
import type { runBody } from "../sources/files/run-body.ts";
import type { destinationBodySchema, replayBodySchema, rotateBodySchema } from "../delivery/config.ts";
import type {
  attemptsListSchema,
  deadLaneSchema,
  destinationListSchema,
  destinationPutSchema,
  destinationSchema,
  replaySchema,
  rotatedSchema,
} from "../delivery/schemas.ts";
import type { streamBodySchema } from "../stream/config.ts";
import type { z } from "zod";
import type { ProviderType } from "../webhooks/provider.ts";

export type {
  Advice,
  CreatedCredential,
  Credential,
  CredentialList,
  Health,
  Healthz,
  Outcome,
  PartitionState,
  Problem,
  Progress,
  ProgressReport,
  Publication,
  PutStreamResult,
  Rescale,
  Reshard,
  Run,
  RunStarted,
  StreamInfo,
  StreamList,
  TableSnapshot,
};
export type { SourceInfo, StateEntry, StreamConfigView } from "../api/schemas.ts";

/** The body of PUT /v1/streams/{stream}, as written (intervals as text or ms; defaults omitted). */
export type StreamBody = z.input<typeof streamBodySchema>;

/** The body of POST …/sources/{source}/credentials: the route's own schema; `secret` omitted to have one generated. */
export type CredentialRequest = z.input<typeof credentialBody>;

/** The body of POST …/runs: the route's own schema. */
export type RunRequest = z.input<typeof runBody>;

/** Destinations (DESIGN §10): the routes' own schemas. */
export type DestinationRequest = z.input<typeof destinationBodySchema>;
export type Destination = z.infer<typeof destinationSchema>;
export type DestinationPut = z.infer<typeof destinationPutSchema>;
export type DeadLane = z.infer<typeof deadLaneSchema>;
export type Replayed = z.infer<typeof replaySchema>;
export type Attempts = z.infer<typeof attemptsListSchema>;
export type RotatedSecret = z.infer<typeof rotatedSchema>;

export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** e.g. https://edge-dedup.example.workers.dev; a function is read on every call (a server that moves) */
  baseUrl: string | (() => string);
  /** the admin token, or a source's token (ingest only); a function is read on every call */
  token?: string | (() => string);
  /** defaults to the global fetch; in workerd, a service binding's or SELF's */
  fetch?: Fetch;
  /** per request, unless the call passes its own signal */
  timeoutMs?: number;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  /** the body as it came (a table file's Parquet) */
  bytes: Uint8Array;
}

export interface RequestOptions {
  body?: BodyInit;
  headers?: Record<string, string>;
  /** replaces the client's token for this call; null: no Authorization header */
  token?: string | null;
  signal?: AbortSignal;
}

export interface IngestOptions extends RequestOptions {
  /** the rows, sent as JSON; or `body`, sent as it is */
  rows?: unknown;
  /** default application/json (NDJSON: application/x-ndjson) */
  contentType?: string;
  /** X-Source: which source sends (default: the credential's, or "default") */
  source?: string;
  /** Idempotency-Key: the batch id; a retry with the same one is answered, not applied again */
  batchId?: string;
}

/** Where a lane's read starts: `after` a commit number, or a `cursor` as X-Commit-Seq gave it (a stream with several shards: one number per shard). */
export interface LaneOptions {
  after?: number;
  cursor?: string;
}

export interface Lane<T> {
  /** NDJSON as served */
  text: string;
  rows: T[];
  /** X-Commit-Seq: the last commit this read covers (a stream with several shards: shard 0's); pass `cursor` as `after` to read what comes next */
  commitSeq: number;
  /** a stream with several shards: X-Commit-Seq as served, one commit number per shard; pass it as `cursor` to read on */
  cursor?: string;
}

/** The service answered, but not with what the operation promises (a success whose body is not JSON, say). */
export class ResponseError extends Error {
  // Plain fields, no parameter properties: Node's type stripping (the CLI) runs this file as it is.
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;

  constructor(status: number, headers: Headers, text: string, message: string) {
    super(message);
    this.name = "ResponseError";
    this.status = status;
    this.headers = headers;
    this.text = text;
  }
}

/** An error status; `problem` is its problem+json body, or null when the body is not JSON (a proxy's page). */
export class ProblemError extends ResponseError {
  readonly problem: Problem | null;

  constructor(res: RawResponse) {
    const problem = jsonObject(res.text);
    super(res.status, res.headers, res.text, describeProblem(res.status, res.text, problem));
    this.name = "ProblemError";
    this.problem = problem === undefined ? null : (problem as Problem);
  }

  /** The problem type's slug (https://edge-dedup.dev/problems/<slug>), or null. */
  get slug(): string | null {
    const type = this.problem?.type;
    return typeof type === "string" ? type.slice(type.lastIndexOf("/") + 1) : null;
  }
}

/** undefined: not JSON; {} for JSON that is not an object. */
function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return undefined;
  }
}

/** "HTTP 404 not-found: stream "s" does not exist": the status, the problem's slug and its detail (or the start of a body that is not JSON). */
function describeProblem(status: number, text: string, problem: Record<string, unknown> | undefined): string {
  const p = problem ?? {};
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const what = str(p.detail) ?? str(p.title) ?? (problem === undefined ? text.slice(0, 200).replace(/\s+/g, " ").trim() : "");
  const type = str(p.type);
  const slug = type ? ` ${type.slice(type.lastIndexOf("/") + 1)}` : "";
  return `HTTP ${status}${slug}${what ? `: ${what}` : ""}`;
}

export function parseNdjson<T = Record<string, unknown>>(text: string): T[] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}

const seg = encodeURIComponent;
const streamPath = (stream: string) => `/v1/streams/${seg(stream)}`;

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

export type Client = ReturnType<typeof createClient>;

export function createClient(options: ClientOptions) {
  const doFetch: Fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
  const base = () => (typeof options.baseUrl === "function" ? options.baseUrl() : options.baseUrl).replace(/\/+$/, "");

  /** Any call, any status: for what the typed methods don't cover, and tests that check statuses. */
  async function request(method: string, path: string, init: RequestOptions = {}): Promise<RawResponse> {
    const headers: Record<string, string> = { ...init.headers };
    const token = init.token !== undefined ? init.token : typeof options.token === "function" ? options.token() : options.token;
    // An Authorization header the caller wrote wins (a test of refusals, a signed request).
    const written = Object.keys(headers).some((k) => k.toLowerCase() === "authorization");
    if (token != null && !written) headers.authorization = `Bearer ${token}`;
    const signal = init.signal ?? (options.timeoutMs !== undefined ? AbortSignal.timeout(options.timeoutMs) : undefined);
    const res = await doFetch(base() + path, { method, headers, body: init.body, ...(signal ? { signal } : {}) });
    const bytes = new Uint8Array(await res.arrayBuffer());
    // Decoded as UTF-8 whatever the type: Response.text() warns under workerd for application/x-ndjson.
    return { status: res.status, headers: res.headers, text: new TextDecoder().decode(bytes), bytes };
  }

  /** The answer's text when its status is one of `ok`; a ProblemError otherwise. */
  async function expectStatus(ok: readonly number[], method: string, path: string, init?: RequestOptions): Promise<RawResponse> {
    const res = await request(method, path, init);
    if (!ok.includes(res.status)) throw new ProblemError(res);
    return res;
  }

  function json<T>(res: RawResponse): T {
    try {
      return JSON.parse(res.text) as T;
    } catch {
      throw new ResponseError(res.status, res.headers, res.text, `HTTP ${res.status} with a body that is not JSON: ${res.text.slice(0, 200)}`);
    }
  }

  const get = async <T>(path: string, init?: RequestOptions) => json<T>(await expectStatus([200], "GET", path, init));
  const jsonBody = (body: unknown, init: RequestOptions = {}): RequestOptions => ({
    ...init,
    body: JSON.stringify(body),
    headers: { "content-type": "application/json", ...init.headers },
  });

  function eventsRequest(input: IngestOptions): RequestOptions {
    const { rows, contentType, source, batchId, ...init } = input;
    const headers: Record<string, string> = { "content-type": contentType ?? "application/json", ...init.headers };
    if (source !== undefined) headers["x-source"] = source;
    if (batchId !== undefined) headers["idempotency-key"] = batchId;
    return { ...init, headers, body: init.body ?? JSON.stringify(rows) };
  }

  async function lane<T>(path: string, stream: string, opts: LaneOptions & RequestOptions = {}): Promise<Lane<T>> {
    const { after, cursor: from, ...init } = opts;
    const res = await expectStatus([200], "GET", `${streamPath(stream)}/${path}${query({ after: from ?? after })}`, init);
    const seq = res.headers.get("x-commit-seq") ?? "0";
    const lane = { text: res.text, rows: parseNdjson<T>(res.text), commitSeq: Number(seq.split(",")[0]) };
    return seq.includes(",") ? { ...lane, cursor: seq } : lane;
  }

  return {
    request,

    listStreams: (opts: { after?: string; limit?: number } = {}) => get<StreamList>(`/v1/streams${query(opts)}`),

    /** 201 when created; 200 when updated or unchanged (result.status says which). */
    async putStream(stream: string, body: StreamBody, init?: RequestOptions): Promise<{ status: number; result: PutStreamResult }> {
      const res = await expectStatus([200, 201], "PUT", streamPath(stream), jsonBody(body, init));
      return { status: res.status, result: json<PutStreamResult>(res) };
    },

    getStream: (stream: string, init?: RequestOptions) => get<StreamInfo>(streamPath(stream), init),

    /** An online rescale to `partitions` (202: started; GET shows it as `rescale` until the move ends), or to `{shards}`, more or fewer (202: done). */
    async rescaleStream<T extends number | { shards: number }>(stream: string, to: T, init?: RequestOptions): Promise<T extends number ? Rescale : Reshard> {
      return json(await expectStatus([202], "PATCH", streamPath(stream), jsonBody(typeof to === "number" ? { partitions: to } : to, init)));
    },

    async deleteStream(stream: string, init?: RequestOptions): Promise<void> {
      await expectStatus([204], "DELETE", streamPath(stream), init);
    },

    /** POST one batch, any status back (a test of refusals, a sender with its own retries). */
    postEvents: (stream: string, input: IngestOptions = {}) => request("POST", `${streamPath(stream)}/events`, eventsRequest(input)),

    /** POST one batch that must be answered 200: its outcome. */
    async ingest(stream: string, input: IngestOptions = {}): Promise<Outcome> {
      return json<Outcome>(await expectStatus([200], "POST", `${streamPath(stream)}/events`, eventsRequest(input)));
    },

    /** A provider's delivery, with its own signature headers (no token). */
    async webhook(stream: string, source: string, body: BodyInit, headers: Record<string, string>): Promise<Outcome> {
      const res = await expectStatus([200], "POST", `${streamPath(stream)}/sources/${seg(source)}/webhook`, { body, headers, token: null });
      return json<Outcome>(res);
    },

    output: <T = Record<string, unknown>>(stream: string, opts?: LaneOptions & RequestOptions) => lane<T>("output", stream, opts),
    late: <T = Record<string, unknown>>(stream: string, opts?: LaneOptions & RequestOptions) => lane<T>("late", stream, opts),
    rejected: <T = Record<string, unknown>>(stream: string, opts?: LaneOptions & RequestOptions) => lane<T>("rejected", stream, opts),
    /** Copies of a remembered id whose content differed from the kept copy's (DESIGN §11). */
    conflicts: <T = Record<string, unknown>>(stream: string, opts?: LaneOptions & RequestOptions) => lane<T>("conflicts", stream, opts),
    /** Every dropped copy, for a stream with keepDuplicates. */
    duplicates: <T = Record<string, unknown>>(stream: string, opts?: LaneOptions & RequestOptions) => lane<T>("duplicates", stream, opts),

    /** The last `limit` (default 100, at most 1000) batches' reports, oldest first. */
    async progress(stream: string, opts: { limit?: number } = {}): Promise<ProgressReport[]> {
      return (await get<Progress>(`${streamPath(stream)}/progress${query(opts)}`)).progress;
    },

    /** A page of the keys one partition remembers. */
    /** a page of one partition's keys; or, given `row` (as ingest would take it), just that row's key if it is remembered */
    state: (stream: string, opts: { partition: number; limit?: number; after?: string } | { row: Record<string, unknown>; provider?: ProviderType }) =>
      get<PartitionState>(
        `${streamPath(stream)}/state${query("row" in opts ? { row: JSON.stringify(opts.row), ...(opts.provider ? { provider: opts.provider } : {}) } : opts)}`,
      ),

    health: (stream: string) => get<Health>(`${streamPath(stream)}/health`),
    /** the delay advisor's live figures per source, and the recommended watermarkDelay */
    advice: (stream: string) => get<Advice>(`${streamPath(stream)}/advice`),

    /** A file run (DESIGN §7): prefix, source, and Spark's file-source options (multiLine, maxFilesPerTrigger, cleanSource…). */
    async startRun(stream: string, body: RunRequest): Promise<RunStarted> {
      return json<RunStarted>(await expectStatus([202], "POST", `${streamPath(stream)}/runs`, jsonBody(body)));
    },

    getRun: (stream: string, id: string) => get<Run>(`${streamPath(stream)}/runs/${seg(id)}`),

    /** how far the committed output is readable outside: /output, the manifest, the table (what a run's done waits for) */
    publication: (stream: string) => get<Publication>(`${streamPath(stream)}/publication`),

    async createCredential(stream: string, source: string, body: CredentialRequest): Promise<CreatedCredential> {
      return json<CreatedCredential>(await expectStatus([201], "POST", `${streamPath(stream)}/sources/${seg(source)}/credentials`, jsonBody(body)));
    },

    async listCredentials(stream: string, source: string): Promise<Credential[]> {
      return (await get<CredentialList>(`${streamPath(stream)}/sources/${seg(source)}/credentials`)).credentials;
    },

    async revokeCredential(stream: string, source: string, id: string): Promise<void> {
      await expectStatus([204], "DELETE", `${streamPath(stream)}/sources/${seg(source)}/credentials/${seg(id)}`);
    },

    table: (stream: string) => get<TableSnapshot>(`${streamPath(stream)}/table`),
    /** One file of the table by its path inside it (`table(stream).files[].path`, or metadata/…): its bytes. */
    tableFile: async (stream: string, path: string, init?: RequestOptions): Promise<Uint8Array> =>
      (await expectStatus([200], "GET", `${streamPath(stream)}/table/file?path=${encodeURIComponent(path)}`, init)).bytes,

    listDestinations: async (stream: string): Promise<Destination[]> =>
      (await get<z.infer<typeof destinationListSchema>>(`${streamPath(stream)}/destinations`)).destinations,

    /** 201 with the http secret (shown once) when created; 200 when updated (a paused destination resumes). */
    async putDestination(stream: string, name: string, body: DestinationRequest): Promise<{ status: number; result: DestinationPut }> {
      const res = await expectStatus([200, 201], "PUT", `${streamPath(stream)}/destinations/${seg(name)}`, jsonBody(body));
      return { status: res.status, result: json<DestinationPut>(res) };
    },

    getDestination: (stream: string, name: string) => get<Destination>(`${streamPath(stream)}/destinations/${seg(name)}`),

    async deleteDestination(stream: string, name: string): Promise<void> {
      await expectStatus([204], "DELETE", `${streamPath(stream)}/destinations/${seg(name)}`);
    },

    /** a page of the destination's dead lane; pass `next` as `after` for the next one */
    deadLane: (stream: string, name: string, opts: { limit?: number; after?: string } = {}) =>
      get<DeadLane>(`${streamPath(stream)}/destinations/${seg(name)}/dead${query(opts)}`),

    /** a row's last attempts by its webhook-id; without one, the failing, dead and recently delivered rows' */
    attempts: (stream: string, name: string, opts: { id?: string; limit?: number } = {}) =>
      get<Attempts>(`${streamPath(stream)}/destinations/${seg(name)}/attempts${query(opts)}`),
    async replayDestination(stream: string, name: string, body: z.input<typeof replayBodySchema>): Promise<Replayed> {
      return json<Replayed>(await expectStatus([202], "POST", `${streamPath(stream)}/destinations/${seg(name)}/replay`, jsonBody(body)));
    },

    async rotateDestinationSecret(stream: string, name: string, body: z.input<typeof rotateBodySchema> = {}): Promise<RotatedSecret> {
      return json<RotatedSecret>(await expectStatus([201], "POST", `${streamPath(stream)}/destinations/${seg(name)}/rotate-secret`, jsonBody(body)));
    },

    /** Prometheus text exposition. */
    async metrics(): Promise<string> {
      return (await expectStatus([200], "GET", "/metrics")).text;
    },

    healthz: () => get<Healthz>("/healthz", { token: null }),
  };
}

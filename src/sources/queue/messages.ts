/**
 * Queue messages (DESIGN §7), the pure part: what a message is, and what the
 * consumer does with each outcome. No Cloudflare imports.
 *
 * A message body is either
 * - a rows message: `{"stream", "source"?, "batchId"?, "rows": [...]}`
 *   (source defaults to "default", as X-Source does; without a batch id the
 *   id is derived from the content, src/sources/ids.ts), or
 * - an R2 event notification of the INPUT bucket: an object created under
 *   `streams-in/{stream}/` is ingested into that stream exactly as a run
 *   would (source "files", batch id `r2:{key}@{etag}`); deletions are ignored.
 */
import { z } from "zod";
import { HARD_MAX_ROWS } from "../../http/body";
import { NAME_PATTERN, NAME_RULE } from "../../stream/name-rule";
import { checkDepth, parseJson, type JsonResult } from "../../lib/json";
import { BATCH_ID_PATTERN } from "../../ingest/batch-id-namespaces";
import { fileMode } from "../file-kind";
import { exhaustive, type SubmitResult } from "../../ingest/result";

/** Objects under `streams-in/{stream}/…` belong to that stream. */
export const INPUT_STREAMS_PREFIX = "streams-in/";
export const CREATE_ACTIONS = ["PutObject", "CopyObject", "CompleteMultipartUpload"];
export const DELETE_ACTIONS = ["DeleteObject", "LifecycleDeletion"];

export type Classified =
  | { kind: "rows"; stream: string; source: string; batchId: string | null; rows: unknown[] }
  | { kind: "object"; stream: string; key: string }
  | { kind: "ignore"; reason: string }
  | { kind: "poison"; reason: string };

const rowsMessage = z.strictObject({
  stream: z.string().regex(NAME_PATTERN, `a stream name: ${NAME_RULE}`),
  source: z.string().regex(NAME_PATTERN, `a source name: ${NAME_RULE}`).optional(),
  batchId: z.string().regex(BATCH_ID_PATTERN, "1-255 visible ASCII characters").optional(),
  rows: z.array(z.unknown()).min(1, "at least one row").max(HARD_MAX_ROWS),
});

/** The stream an input object belongs to: `streams-in/{stream}/{rest}`. */
export function streamOfKey(key: string): string | null {
  if (!key.startsWith(INPUT_STREAMS_PREFIX)) return null;
  const rest = key.slice(INPUT_STREAMS_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1) return null;
  const stream = rest.slice(0, slash);
  return NAME_PATTERN.test(stream) ? stream : null;
}

/**
 * A message body as a value, within the depth limit (checked before anything
 * recurses into it: hashing, zod), or why not, in words that never quote it.
 */
function decode(body: unknown): JsonResult {
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    const bytes = body instanceof ArrayBuffer ? new Uint8Array(body) : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    body = new TextDecoder().decode(bytes);
  }
  if (typeof body === "string") return parseJson(body);
  // Sent as an object (content type "json" or "v8"): already parsed, so the depth is checked on the value.
  return checkDepth(body);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** What a delivered message is; `inputBucket`: the INPUT binding's bucket name (notifications of others are refused). */
export function classify(raw: unknown, inputBucket: string | undefined): Classified {
  const decoded = decode(raw);
  if (!decoded.ok) return { kind: "poison", reason: `the body ${decoded.error}` };
  const body = decoded.value;
  if (!isObject(body)) return { kind: "poison", reason: "the body is not a JSON object" };
  if (typeof body.action === "string" && isObject(body.object)) return classifyNotification(body, inputBucket);
  const parsed = rowsMessage.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(message)"}: ${i.message}`).join("; ");
    return { kind: "poison", reason: `not a rows message {"stream", "source"?, "batchId"?, "rows": [...]} nor an R2 event notification: ${issues}` };
  }
  const m = parsed.data;
  return { kind: "rows", stream: m.stream, source: m.source ?? "default", batchId: m.batchId ?? null, rows: m.rows };
}

function classifyNotification(body: Record<string, unknown>, inputBucket: string | undefined): Classified {
  const action = body.action as string;
  const key = (body.object as Record<string, unknown>).key;
  if (typeof key !== "string" || key === "") return { kind: "poison", reason: "an R2 event notification without object.key" };
  if (inputBucket && body.bucket !== inputBucket) {
    return { kind: "poison", reason: `an R2 event notification of bucket "${String(body.bucket)}"; this consumer reads "${inputBucket}" (INPUT)` };
  }
  if (DELETE_ACTIONS.includes(action)) return { kind: "ignore", reason: `${action} ${key}: output is append-only` };
  if (!CREATE_ACTIONS.includes(action)) return { kind: "poison", reason: `an R2 event notification with unknown action "${action}"` };
  if (fileMode(key) === null) return { kind: "ignore", reason: `${key} is not a .json, .ndjson or .jsonl object` };
  const stream = streamOfKey(key);
  if (stream === null) return { kind: "poison", reason: `${key} is not under ${INPUT_STREAMS_PREFIX}{stream}/: it names no stream` };
  return { kind: "object", stream, key };
}

export type Verdict = { action: "ack" } | { action: "retry" } | { action: "dead-letter"; reason: string };

/**
 * The queue adapter's mapper: what the consumer does with a message from its
 * batch's result. A refusal that cannot pass goes to the DLQ with a reason
 * that names no row content; what may pass is retried.
 */
export function queueVerdict(r: SubmitResult, stream: string, batchId: string): Verdict {
  switch (r.kind) {
    case "committed":
    case "replayed":
      return { action: "ack" };
    case "missing":
      return { action: "dead-letter", reason: `stream "${stream}" does not exist` };
    case "unauthorized":
      return { action: "dead-letter", reason: "refused: unauthorized" };
    case "invalid":
      return { action: "dead-letter", reason: `refused (400): ${r.detail}` };
    case "forbidden":
      return { action: "dead-letter", reason: `refused (403): ${r.detail}` };
    case "too-large":
      return { action: "dead-letter", reason: `refused (413): ${r.detail}` };
    case "conflict":
      return { action: "dead-letter", reason: `refused (422): batch id "${batchId}" was already used with other rows` };
    case "busy":
    case "failed":
      return { action: "retry" };
    default:
      return exhaustive(r);
  }
}

/** Redelivery after a failure that may pass: 2 s, 4 s, … up to 5 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(300, 2 ** Math.max(1, attempts));
}

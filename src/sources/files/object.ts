import type { ReceivedBatch } from "../../coordinator/protocol";
import { HARD_BODY_LIMIT, HARD_MAX_ROWS, TooManyRows } from "../../http/body";
import { concat } from "../../lib/bytes";
import { batchIdentity } from "../../stream/batch-identity";
import { badRequest, HttpError } from "../../http/problem";
import type { StreamConfig } from "../../stream/config";
import { fileMode, isGzip } from "../file-kind";
import { bareEtag, fileBatchId } from "../ids";
import { fileRows } from "./parse";

export type ObjectBatch = { kind: "batch"; batch: ReceivedBatch; etag: string; corruptLines: number[] } | { kind: "gone" };

/** How a file is read (DESIGN §7): Spark's `multiLine` (absent: a .json file is JSON Lines unless it is one JSON document). */
export interface ReadOptions {
  multiLine?: boolean;
}

/**
 * One input object as one batch, the same way for a run and for an R2 event
 * notification: batch id `r2:{key}@{etag}` of the version actually read, rows
 * read as Spark reads the file (./parse.ts; `.gz` decompressed first), within
 * the stream's limits. An object over them, or unparsable as a whole, throws
 * the HttpError an HTTP ingest of those bytes would get (413, 400); a line
 * that is not JSON is a rejected row. `knownBatch` lets a batch that began
 * under higher limits finish (as ingest does). Runs as the admin: the caller
 * is the service itself.
 */
export async function readObjectBatch(
  bucket: R2Bucket,
  key: string,
  source: string,
  limits: StreamConfig["limits"],
  knownBatch: (source: string, batchId: string) => Promise<boolean>,
  options: ReadOptions = {},
): Promise<ObjectBatch> {
  const mode = fileMode(key);
  if (mode === null) throw new HttpError(400, "invalid-request", "Invalid request", `${key} is not a .json, .ndjson or .jsonl object (optionally .gz)`);
  const obj = await bucket.get(key);
  if (obj === null) return { kind: "gone" };
  const etag = bareEtag(obj.etag);
  const batchId = await fileBatchId(key, etag);
  let known: Promise<boolean> | undefined;
  const began = () => (known ??= knownBatch(source, batchId));
  const tooLarge = (what: string) =>
    new HttpError(413, "body-too-large", "Payload too large", `${what}; this stream accepts at most ${limits.maxBodyBytes} per batch; split the file`);
  if (obj.size > limits.maxBodyBytes && (obj.size > HARD_BODY_LIMIT || !(await began()))) {
    await obj.body.cancel();
    throw tooLarge(`the object is ${obj.size} bytes`);
  }
  let bytes: Uint8Array;
  if (isGzip(key)) {
    // Decompressed up to the hard limit at most: a small object may expand to anything.
    const out = await gunzip(obj.body, HARD_BODY_LIMIT);
    if (out === null) throw tooLarge(`the object is more than ${HARD_BODY_LIMIT} bytes decompressed`);
    if (out.byteLength > limits.maxBodyBytes && !(await began())) throw tooLarge(`the object is ${out.byteLength} bytes decompressed`);
    bytes = out;
  } else bytes = new Uint8Array(await obj.arrayBuffer());
  const text = decodeUtf8(bytes);
  let read;
  try {
    read = fileRows(text, mode, options.multiLine, limits.maxRows);
  } catch (e) {
    if (!(e instanceof TooManyRows) || !(await began())) throw e;
    read = fileRows(text, mode, options.multiLine, HARD_MAX_ROWS);
  }
  const batch: ReceivedBatch = {
    sourceHeader: source,
    batchId,
    auth: { kind: "admin" },
    rows: read.rows,
    identity: await batchIdentity(bytes, read.readAs),
    bytes: bytes.byteLength,
  };
  return { kind: "batch", batch, etag, corruptLines: read.corruptLines };
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw badRequest("the file is not valid UTF-8");
  }
}

/** The gunzipped bytes, or null past `limit`; not gzip at all is a 400. */
async function gunzip(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | null> {
  const reader = body.pipeThrough(new DecompressionStream("gzip")).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return null;
      }
      chunks.push(value);
    }
  } catch {
    throw badRequest("the object ends in .gz but is not valid gzip");
  }
  return concat(...chunks);
}

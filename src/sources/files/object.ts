import type { ReceivedBatch } from "../../coordinator";
import { batchIdentity, HARD_BODY_LIMIT, HARD_MAX_ROWS, parseRows, TooManyRows } from "../../api/body";
import { HttpError } from "../../api/problem";
import type { StreamConfig } from "../../stream/config";
import { bareEtag, fileBatchId, fileMode, MODE_CONTENT_TYPE } from "../ids";

export type ObjectBatch = { kind: "batch"; batch: ReceivedBatch; etag: string } | { kind: "gone" };

/**
 * One input object as one batch, the same way for a run and for an R2 event
 * notification: batch id `r2:{key}@{etag}` of the version actually read, rows
 * parsed by the key's ending (.json: an object or an array; .ndjson/.jsonl:
 * one value per line), within the stream's limits. An object over them, or
 * unparsable, throws the HttpError an HTTP ingest of those bytes would get
 * (413, 400). `knownBatch` lets a batch that began under higher limits
 * finish (as ingest does). Runs as the admin: the caller is the service itself.
 */
export async function readObjectBatch(
  bucket: R2Bucket,
  key: string,
  source: string,
  limits: StreamConfig["limits"],
  knownBatch: (source: string, batchId: string) => Promise<boolean>,
): Promise<ObjectBatch> {
  const mode = fileMode(key);
  if (mode === null) throw new HttpError(400, "invalid-request", "Invalid request", `${key} is not a .json, .ndjson or .jsonl object`);
  const obj = await bucket.get(key);
  if (obj === null) return { kind: "gone" };
  const etag = bareEtag(obj.etag);
  const batchId = await fileBatchId(key, etag);
  let known: Promise<boolean> | undefined;
  const began = () => (known ??= knownBatch(source, batchId));
  if (obj.size > limits.maxBodyBytes && (obj.size > HARD_BODY_LIMIT || !(await began()))) {
    await obj.body.cancel();
    throw new HttpError(413, "body-too-large", "Payload too large",
      `the object is ${obj.size} bytes; this stream accepts at most ${limits.maxBodyBytes} per batch; split the file`);
  }
  const bytes = new Uint8Array(await obj.arrayBuffer());
  let rows: unknown[];
  try {
    rows = parseRows(bytes, MODE_CONTENT_TYPE[mode], limits.maxRows);
  } catch (e) {
    if (!(e instanceof TooManyRows) || !(await began())) throw e;
    rows = parseRows(bytes, MODE_CONTENT_TYPE[mode], HARD_MAX_ROWS);
  }
  const batch: ReceivedBatch = {
    sourceHeader: source,
    batchId,
    auth: { kind: "admin" },
    rows,
    identity: await batchIdentity(bytes, mode),
    bytes: bytes.byteLength,
  };
  return { kind: "batch", batch, etag };
}

import { failAt, type FaultPoint } from "./faults";

/**
 * The R2 sink. A batch writes up to three NDJSON objects — its output
 * (`data`), its late rows and its rejected rows — and then a commit marker for
 * (source, batch id). Every put is create-only, so a replayed batch never
 * overwrites: it finds its objects (same bytes, by construction) and skips
 * them. Keys carry the stream's epoch, so a stream deleted and created again
 * never meets its predecessor's objects.
 */
export const LANES = ["data", "late", "rejected"] as const;
export type Lane = (typeof LANES)[number];
export type LaneKeys = Record<Lane, string | null>;

export function objectKey(stream: string, epoch: string, source: string, batchId: string, lane: Lane | "_commits"): string {
  const id = `${encodeURIComponent(source)}/${encodeURIComponent(batchId)}`;
  return `streams/${stream}/${lane}/${epoch}/${id}.${lane === "_commits" ? "json" : "ndjson"}`;
}

const CREATE_ONLY = { onlyIf: { etagDoesNotMatch: "*" } } as const;

/**
 * Writes the batch's non-empty lanes, then its marker. Idempotent. Returns the
 * key of each lane written (null for an empty lane), which the commit records.
 */
export async function writeBatch(
  bucket: R2Bucket,
  where: { stream: string; epoch: string; source: string; batchId: string },
  lanes: Record<Lane, string>,
  marker: Record<string, unknown>,
  fault?: FaultPoint | null,
): Promise<LaneKeys> {
  const keyOf = (lane: Lane | "_commits") => objectKey(where.stream, where.epoch, where.source, where.batchId, lane);
  const keys = {} as LaneKeys;
  await Promise.all(
    LANES.map(async (lane) => {
      keys[lane] = lanes[lane].length > 0 ? keyOf(lane) : null;
      if (keys[lane]) await bucket.put(keys[lane], lanes[lane], { ...CREATE_ONLY, httpMetadata: { contentType: "application/x-ndjson" } });
    }),
  );
  failAt(fault, "after-data");
  await bucket.put(keyOf("_commits"), JSON.stringify({ ...marker, objects: keys }), {
    ...CREATE_ONLY,
    httpMetadata: { contentType: "application/json" },
  });
  return keys;
}

export async function readObject(bucket: R2Bucket, key: string): Promise<ReadableStream | null> {
  return (await bucket.get(key))?.body ?? null;
}

/** Deletes every object of a stream (all lanes and markers), 1,000 at a time. */
export async function deleteStreamObjects(bucket: R2Bucket, stream: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: `streams/${stream}/`, cursor, limit: 1000 });
    if (page.objects.length > 0) await bucket.delete(page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}

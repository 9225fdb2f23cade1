import { crashPoint, groupFaultKey } from "../instrument/faults";
import type { ObjectRef } from "./object-ref";

/**
 * The R2 sink. A micro-batch (a group of requests) writes up to five NDJSON
 * objects — its output (`data`), its late rows, its rejected rows, its
 * conflicts and (with keepDuplicates) its duplicates — and then one commit
 * marker. Each request's rows are a byte range of the group's
 * objects; the commit index records `key#offset+length` per request and lane.
 * Every put is create-only and every group has a fresh id, so nothing is ever
 * overwritten. Keys carry the stream's epoch, so a stream deleted and created
 * again never meets its predecessor's objects.
 */
export const LANES = ["data", "late", "rejected", "conflicts", "duplicates"] as const;
export type Lane = (typeof LANES)[number];
/** The conflicts and duplicates lanes' keys may be absent (a commit from callers that write neither). */
export type LaneKeys = Record<"data" | "late" | "rejected", string | null> & Partial<Record<"conflicts" | "duplicates", string | null>>;

export function groupObjectKey(stream: string, epoch: string, group: string, lane: Lane | "_commits"): string {
  return `streams/${stream}/${lane}/${epoch}/${group}.${lane === "_commits" ? "json" : "ndjson"}`;
}

const CREATE_ONLY = { onlyIf: { etagDoesNotMatch: "*" } } as const;

/** Writes the group's non-empty lanes, then its marker. Returns the key of each lane written (null when empty). */
export async function writeGroup(
  bucket: R2Bucket,
  where: { stream: string; epoch: string; group: string },
  lanes: Record<Lane, Uint8Array>,
  marker: Record<string, unknown>,
): Promise<LaneKeys> {
  const keyOf = (lane: Lane | "_commits") => groupObjectKey(where.stream, where.epoch, where.group, lane);
  const keys = {} as LaneKeys;
  await Promise.all(
    LANES.map(async (lane) => {
      keys[lane] = lanes[lane].length > 0 ? keyOf(lane) : null;
      if (keys[lane]) await bucket.put(keys[lane], lanes[lane], { ...CREATE_ONLY, httpMetadata: { contentType: "application/x-ndjson" } });
    }),
  );
  crashPoint(groupFaultKey(where.group), "after-data"); // test builds only (src/instrument/faults.ts)
  await bucket.put(keyOf("_commits"), JSON.stringify({ ...marker, objects: keys }), {
    ...CREATE_ONLY,
    httpMetadata: { contentType: "application/json" },
  });
  return keys;
}

export async function readObject(bucket: R2Bucket, ref: ObjectRef): Promise<ReadableStream | null> {
  return (await bucket.get(ref.key, ref.range ? { range: ref.range } : undefined))?.body ?? null;
}

/** Deletes every object of a stream (all lanes, markers, manifest entries and its table), 1,000 at a time. */
export async function deleteStreamObjects(bucket: R2Bucket, stream: string): Promise<void> {
  for (const prefix of [`streams/${stream}/`, `tables/${stream}/`]) {
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, cursor, limit: 1000 });
      if (page.objects.length > 0) await bucket.delete(page.objects.map((o) => o.key));
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
  }
}

/**
 * The R2 sink. A batch's emitted rows go to one NDJSON object, then a commit
 * marker for (source, batch id). Both puts are create-only, so a replayed batch
 * never overwrites: it finds its objects (same bytes, by construction) and
 * skips them. Keys carry the stream's epoch, so a stream deleted and created
 * again never meets its predecessor's objects.
 */
export interface BatchObjects {
  dataKey: string;
  markerKey: string;
}

export function objectKeys(stream: string, epoch: string, source: string, batchId: string): BatchObjects {
  const id = `${encodeURIComponent(source)}/${encodeURIComponent(batchId)}`;
  return {
    dataKey: `streams/${stream}/data/${epoch}/${id}.ndjson`,
    markerKey: `streams/${stream}/_commits/${epoch}/${id}.json`,
  };
}

const CREATE_ONLY = { onlyIf: { etagDoesNotMatch: "*" } } as const;

/** Writes the data object (when there is output) and then the marker. Idempotent. */
export async function writeBatch(
  bucket: R2Bucket,
  keys: BatchObjects,
  output: string,
  marker: Record<string, unknown>,
): Promise<string | null> {
  const dataKey = output.length > 0 ? keys.dataKey : null;
  if (dataKey) {
    await bucket.put(dataKey, output, { ...CREATE_ONLY, httpMetadata: { contentType: "application/x-ndjson" } });
  }
  await bucket.put(keys.markerKey, JSON.stringify({ ...marker, dataKey }), { ...CREATE_ONLY, httpMetadata: { contentType: "application/json" } });
  return dataKey;
}

export async function readObject(bucket: R2Bucket, key: string): Promise<ReadableStream | null> {
  return (await bucket.get(key))?.body ?? null;
}

/** Deletes every object of a stream (data, markers, and later lanes), 1,000 at a time. */
export async function deleteStreamObjects(bucket: R2Bucket, stream: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: `streams/${stream}/`, cursor, limit: 1000 });
    if (page.objects.length > 0) await bucket.delete(page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}

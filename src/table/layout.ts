/**
 * Where a stream's table lives: bucket keys under `tables/{stream}/`, and the
 * absolute URIs Iceberg metadata records (the table's `location` plus the same
 * relative path), so an external reader that maps the location to the bucket
 * (R2's S3 endpoint, or an HTTP origin in the tests) finds every file.
 */
export const DEFAULT_BASE_URI = "r2://edge-dedup-output";

export const tableRoot = (stream: string) => `tables/${stream}`;
export const tableLocation = (baseUri: string, stream: string) => `${baseUri.replace(/\/+$/, "")}/${tableRoot(stream)}`;

export const metadataPath = (version: number) => `metadata/v${version}.metadata.json`;
/** Every metadata version's key starts so (manifests and lists are named by uuid and `snap-`: never `v`). */
export const METADATA_VERSION_PREFIX = "metadata/v";
/** N of a key or URI ending in `metadata/vN.metadata.json`; null for any other. */
export function versionOfKey(key: string): number | null {
  const m = /\/metadata\/v(\d+)\.metadata\.json$/.exec(key);
  return m ? Number(m[1]) : null;
}
export const VERSION_HINT_PATH = "metadata/version-hint.text";
/** Java's names: `snap-{snapshot}-{attempt}-{commit uuid}.avro` and `{commit uuid}-m{n}.avro`. */
export const manifestListPath = (snapshotId: number, commitId: string) => `metadata/snap-${snapshotId}-1-${commitId}.avro`;
export const manifestPath = (commitId: string, n: number) => `metadata/${commitId}-m${n}.avro`;
/**
 * A data file is named by what it holds: the commit sequence (or compaction's
 * sequence number) and a digest of its bytes. A retried append writes the same
 * bytes to the same key, so a crash between the data write and the metadata
 * commit leaves nothing behind but the file the retry reuses; different bytes
 * never land on a key a committed snapshot references.
 */
export const dataPath = (kind: "append" | "compact", seq: number, digest: string) =>
  `data/${kind === "append" ? "c" : "r"}${String(seq).padStart(20, "0")}-${digest}.parquet`;

export const keyOf = (stream: string, path: string) => `${tableRoot(stream)}/${path}`;
export const uriOf = (location: string, path: string) => `${location}/${path}`;

/** The bucket key of a file the metadata names by URI; only files inside the table's location are ours. */
export function keyOfUri(stream: string, location: string, uri: string): string {
  if (!uri.startsWith(`${location}/`)) throw new Error(`${uri} is outside the table location ${location}`);
  return keyOf(stream, uri.slice(location.length + 1));
}

export async function digestOf(bytes: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Array.from(hash.subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

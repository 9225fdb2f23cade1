import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { icebergRead } from "icebird";
import type { TableStore } from "../../src/table/store";

/**
 * An independent reader for the tables src/table writes: the in-memory bucket
 * served over HTTP on 127.0.0.1 (with byte ranges, as object stores answer),
 * read back by icebird, which follows version-hint.text → metadata JSON →
 * manifest list → manifests → Parquet with its own Avro and Parquet readers.
 */
export interface ServedBucket {
  /** the base URI to create tables under, so the metadata's paths point at this server */
  baseUri: string;
  read(stream: string, metadataFileName?: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export async function serveBucket(store: TableStore): Promise<ServedBucket> {
  const server: Server = createServer(async (req, res) => {
    const key = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname.slice(1));
    const bytes = await store.get(key);
    if (bytes === null) return void res.writeHead(404).end();
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const [start, end] = range ? [Number(range[1]), range[2] ? Number(range[2]) + 1 : bytes.length] : [0, bytes.length];
    const body = bytes.subarray(start, Math.min(end, bytes.length));
    res.writeHead(range ? 206 : 200, { "content-length": String(req.method === "HEAD" ? bytes.length : body.length) });
    res.end(req.method === "HEAD" ? undefined : body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUri,
    read: (stream, metadataFileName) => icebergRead({ tableUrl: `${baseUri}/tables/${stream}`, metadataFileName }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The in-memory bucket's objects as files under `dir` (by their keys): what DuckDB reads with no object store. */
export async function writeObjects(objects: ReadonlyMap<string, Uint8Array>, dir: string): Promise<void> {
  for (const [key, bytes] of objects) {
    await mkdir(dirname(join(dir, key)), { recursive: true });
    await writeFile(join(dir, key), bytes);
  }
}

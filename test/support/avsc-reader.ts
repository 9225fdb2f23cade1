import { Buffer } from "node:buffer";
import { Readable } from "node:stream";
import avro from "avsc";

/** An Avro container file read by avsc's stream decoder: an independent check of our encoding. */
export async function decodeWithAvsc(bytes: Uint8Array): Promise<{ schema: string; metadata: Record<string, string>; records: Record<string, unknown>[] }> {
  const decoder = new avro.streams.BlockDecoder();
  const records: Record<string, unknown>[] = [];
  let header: { meta: Record<string, Buffer> } | null = null;
  decoder.on("metadata", (_type: unknown, _codec: unknown, h: { meta: Record<string, Buffer> }) => (header = h));
  decoder.on("data", (r: Record<string, unknown>) => records.push({ ...r }));
  await new Promise((resolve, reject) =>
    Readable.from([Buffer.from(bytes)])
      .pipe(decoder)
      .on("finish", resolve)
      .on("error", reject),
  );
  const meta = Object.fromEntries(Object.entries(header!.meta).map(([k, v]) => [k, v.toString()]));
  return { schema: meta["avro.schema"], metadata: meta, records };
}

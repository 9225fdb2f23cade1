import { AvroReader, AvroWriter, type AvroSchema } from "./avro-binary";

/**
 * Avro object container files (the format of Iceberg manifests and manifest
 * lists). The framing is the spec's: magic, a metadata map, a sync marker,
 * then blocks of (count, size, records, sync). One block, no compression:
 * manifests are small. The schema JSON goes into `avro.schema` exactly as
 * given, with Iceberg's `field-id` attributes.
 */
const MAGIC = [0x4f, 0x62, 0x6a, 0x01]; // "Obj" 1
const META: AvroSchema = { type: "map", values: "bytes" };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface AvroFile {
  /** the writer's schema, as stored in `avro.schema` */
  schema: AvroSchema;
  /** the file's metadata, other than the `avro.*` keys */
  metadata: Record<string, string>;
  records: Record<string, unknown>[];
}

export function encodeAvroFile(schema: AvroSchema, metadata: Record<string, string>, records: readonly Record<string, unknown>[]): Uint8Array {
  const sync = crypto.getRandomValues(new Uint8Array(16));
  const meta = { ...metadata, "avro.schema": JSON.stringify(schema), "avro.codec": "null" };
  const out = new AvroWriter();
  out.raw(Uint8Array.from(MAGIC));
  out.write(META, Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, encoder.encode(v)])));
  out.raw(sync);
  if (records.length > 0) {
    const block = new AvroWriter();
    for (const r of records) block.write(schema, r);
    const body = block.finish();
    out.long(records.length);
    out.bytes(body);
    out.raw(sync);
  }
  return out.finish();
}

export function decodeAvroFile(bytes: Uint8Array): AvroFile {
  const input = new AvroReader(bytes);
  const magic = input.raw(4);
  if (!MAGIC.every((b, i) => magic[i] === b)) throw new Error("not an Avro object container file");
  const meta = Object.fromEntries(Object.entries(input.read(META) as Record<string, Uint8Array>).map(([k, v]) => [k, decoder.decode(v)]));
  const codec = meta["avro.codec"] ?? "null";
  if (codec !== "null") throw new Error(`Avro codec ${codec} is not supported`);
  const schema = JSON.parse(meta["avro.schema"]) as AvroSchema;
  const sync = input.raw(16).slice();
  const records: Record<string, unknown>[] = [];
  while (!input.done) {
    const count = input.long();
    input.long(); // the block's byte size
    for (let i = 0; i < count; i++) records.push(input.read(schema) as Record<string, unknown>);
    if (!input.raw(16).every((b, i) => b === sync[i])) throw new Error("Avro: sync marker mismatch");
  }
  const metadata = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith("avro.")));
  return { schema, metadata, records };
}

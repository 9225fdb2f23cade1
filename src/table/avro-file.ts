import { Buffer } from "node:buffer";
import avro from "avsc";

/**
 * Avro object container files (the format of Iceberg manifests and manifest
 * lists), encoded and decoded with avsc's types. The framing is the spec's:
 * magic, a metadata map, a sync marker, then blocks of (count, size, records,
 * sync). One block, no compression: manifests are small. The schema JSON goes
 * into `avro.schema` exactly as given, so Iceberg's `field-id` attributes
 * (which avsc would not keep) reach readers.
 */
const MAGIC = Buffer.from("Obj\x01", "latin1");
const HEADER = avro.Type.forSchema({
  type: "record",
  name: "org.apache.avro.file.Header",
  fields: [
    { name: "magic", type: { type: "fixed", name: "Magic", size: 4 } },
    { name: "meta", type: { type: "map", values: "bytes" } },
    { name: "sync", type: { type: "fixed", name: "Sync", size: 16 } },
  ],
});
const LONG = avro.Type.forSchema("long");

export interface AvroFile {
  /** the writer's schema, as stored in `avro.schema` */
  schema: unknown;
  /** the file's metadata, other than the `avro.*` keys */
  metadata: Record<string, string>;
  records: Record<string, unknown>[];
}

export function encodeAvroFile(schema: object, metadata: Record<string, string>, records: readonly Record<string, unknown>[]): Uint8Array {
  const type = avro.Type.forSchema(schema as avro.Schema);
  const sync = Buffer.from(crypto.getRandomValues(new Uint8Array(16)));
  const meta: Record<string, Buffer> = { "avro.schema": Buffer.from(JSON.stringify(schema)), "avro.codec": Buffer.from("null") };
  for (const [k, v] of Object.entries(metadata)) meta[k] = Buffer.from(v);
  const body = Buffer.concat(records.map((r) => type.toBuffer(r)));
  const parts = [HEADER.toBuffer({ magic: MAGIC, meta, sync })];
  if (records.length > 0) parts.push(LONG.toBuffer(records.length), LONG.toBuffer(body.length), body, sync);
  return new Uint8Array(Buffer.concat(parts));
}

export function decodeAvroFile(bytes: Uint8Array): AvroFile {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!buf.subarray(0, 4).equals(MAGIC)) throw new Error("not an Avro object container file");
  const header = HEADER.decode(buf, 0);
  const meta = header.value.meta as Record<string, Buffer>;
  const codec = meta["avro.codec"]?.toString() ?? "null";
  if (codec !== "null") throw new Error(`Avro codec ${codec} is not supported`);
  const schema = JSON.parse(meta["avro.schema"].toString());
  const type = avro.Type.forSchema(schema);
  const records: Record<string, unknown>[] = [];
  let offset = header.offset;
  while (offset < buf.length) {
    const count = LONG.decode(buf, offset);
    const size = LONG.decode(buf, count.offset);
    let at = size.offset;
    for (let i = 0; i < count.value; i++) {
      const record = type.decode(buf, at);
      records.push(record.value);
      at = record.offset;
    }
    offset = size.offset + size.value + 16;
  }
  const metadata = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith("avro.")).map(([k, v]) => [k, v.toString()]));
  return { schema, metadata, records };
}

/**
 * Avro's binary encoding, interpreted from the schema: the subset Iceberg's
 * manifests use (null, boolean, int, long, string, bytes, fixed, record,
 * array, map, and unions of null with one type). Our own because avsc
 * compiles its readers and writers with `new Function`, which Workers refuse
 * ("Code generation from strings disallowed", mtth/avsc#401). Longs are JS
 * numbers within ±2^53, which is all the table writes.
 */
export type AvroSchema =
  | "null"
  | "boolean"
  | "int"
  | "long"
  | "string"
  | "bytes"
  | { type: "record"; name: string; fields: readonly AvroField[] }
  | { type: "array"; items: AvroSchema; "element-id"?: number; logicalType?: "map" }
  | { type: "map"; values: AvroSchema }
  | { type: "fixed"; name: string; size: number }
  /** an int or long with a logical type (Iceberg's partition values: `date`) */
  | { type: "int" | "long"; logicalType: string }
  | readonly AvroSchema[];

/** Iceberg's `field-id` rides along as an attribute Avro itself ignores. */
export interface AvroField {
  name: string;
  type: AvroSchema;
  default?: null;
  "field-id"?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class AvroWriter {
  private chunks: number[] = [];
  private parts: Uint8Array[] = [];

  long(value: number): void {
    if (!Number.isSafeInteger(value)) throw new Error(`Avro long: ${value} is not a safe integer`);
    let z = BigInt(value);
    z = (z << 1n) ^ (z >> 63n);
    do {
      const byte = Number(z & 0x7fn);
      z >>= 7n;
      this.chunks.push(z > 0n ? byte | 0x80 : byte);
    } while (z > 0n);
  }

  raw(bytes: Uint8Array): void {
    this.flush();
    this.parts.push(bytes);
  }

  bytes(bytes: Uint8Array): void {
    this.long(bytes.length);
    this.raw(bytes);
  }

  write(schema: AvroSchema, value: unknown): void {
    if (Array.isArray(schema)) {
      const branch = value === null || value === undefined ? schema.indexOf("null") : schema.findIndex((s) => s !== "null");
      if (branch < 0) throw new Error(`Avro union ${JSON.stringify(schema)}: no branch for ${String(value)}`);
      this.long(branch);
      return this.write(schema[branch], value);
    }
    if (typeof schema === "string") {
      switch (schema) {
        case "null":
          return;
        case "boolean":
          return void this.chunks.push(value ? 1 : 0);
        case "int":
        case "long":
          return this.long(value as number);
        case "string":
          return this.bytes(encoder.encode(value as string));
        case "bytes":
          return this.bytes(value as Uint8Array);
      }
    }
    const s = schema as Exclude<AvroSchema, string | readonly AvroSchema[]>;
    switch (s.type) {
      case "record":
        for (const f of s.fields) this.write(f.type, (value as Record<string, unknown>)[f.name]);
        return;
      case "array": {
        const items = value as unknown[];
        if (items.length > 0) this.long(items.length);
        for (const item of items) this.write(s.items, item);
        return this.long(0);
      }
      case "map": {
        const entries = Object.entries(value as Record<string, unknown>);
        if (entries.length > 0) this.long(entries.length);
        for (const [k, v] of entries) {
          this.write("string", k);
          this.write(s.values, v);
        }
        return this.long(0);
      }
      case "fixed":
        return this.raw(value as Uint8Array);
      case "int":
      case "long":
        return this.long(value as number);
    }
  }

  private flush(): void {
    if (this.chunks.length > 0) this.parts.push(Uint8Array.from(this.chunks));
    this.chunks = [];
  }

  finish(): Uint8Array {
    this.flush();
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

export class AvroReader {
  offset = 0;
  constructor(private readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.offset >= this.buf.length;
  }

  long(): number {
    let z = 0n;
    let shift = 0n;
    for (;;) {
      if (this.offset >= this.buf.length) throw new Error("Avro: truncated varint");
      const byte = this.buf[this.offset++];
      z |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
      shift += 7n;
    }
    return Number((z >> 1n) ^ -(z & 1n));
  }

  raw(length: number): Uint8Array {
    if (this.offset + length > this.buf.length) throw new Error("Avro: truncated data");
    const out = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  read(schema: AvroSchema): unknown {
    if (Array.isArray(schema)) return this.read(schema[this.long()]);
    if (typeof schema === "string") {
      switch (schema) {
        case "null":
          return null;
        case "boolean":
          return this.raw(1)[0] !== 0;
        case "int":
        case "long":
          return this.long();
        case "string":
          return decoder.decode(this.raw(this.long()));
        case "bytes":
          return this.raw(this.long()).slice();
      }
    }
    const s = schema as Exclude<AvroSchema, string | readonly AvroSchema[]>;
    switch (s.type) {
      case "record":
        return Object.fromEntries(s.fields.map((f) => [f.name, this.read(f.type)]));
      case "array": {
        const items: unknown[] = [];
        this.blocks(() => items.push(this.read(s.items)));
        return items;
      }
      case "map": {
        const map: Record<string, unknown> = {};
        this.blocks(() => {
          const key = this.read("string") as string;
          map[key] = this.read(s.values);
        });
        return map;
      }
      case "fixed":
        return this.raw(s.size).slice();
      case "int":
      case "long":
        return this.long();
    }
  }

  /** Array and map blocks: a count (negative: followed by the block's byte size), until a zero count. */
  private blocks(item: () => void): void {
    for (let count = this.long(); count !== 0; count = this.long()) {
      if (count < 0) this.long();
      for (let i = 0; i < Math.abs(count); i++) item();
    }
  }
}

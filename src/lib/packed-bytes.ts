/**
 * Byte-level reading and writing for packed records (the key segments,
 * src/stream/key-segment.ts): a growing writer, a reader, fixed-width
 * unsigned numbers up to 2^53 and big-endian halves of 64-bit values. Pure.
 */

export function compareBytes(a: Uint8Array, ao: number, al: number, b: Uint8Array, bo: number, bl: number): number {
  const n = Math.min(al, bl);
  for (let i = 0; i < n; i++) {
    const d = a[ao + i] - b[bo + i];
    if (d !== 0) return d;
  }
  return al - bl;
}

/** Bytes an unsigned whole number up to 2^53 takes (0: zero only). */
export function widthOf(max: number): number {
  let w = 0;
  while (max > 0) (max = Math.floor(max / 256)), w++;
  return w;
}

export class Writer {
  private buf = new Uint8Array(256);
  private view = new DataView(this.buf.buffer);
  at = 0;

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.at + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.at));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.at++] = v;
  }

  /** An unsigned whole number in `w` bytes, little-endian. */
  uint(v: number, w: number): void {
    this.room(w);
    for (let i = 0; i < w; i++) (this.buf[this.at++] = v % 256), (v = Math.floor(v / 256));
  }

  varint(v: number): void {
    while (v >= 128) this.u8((v % 128) | 128), (v = Math.floor(v / 128));
    this.u8(v);
  }

  f64(v: number): void {
    this.room(8);
    this.view.setFloat64(this.at, v, true);
    this.at += 8;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  done(): Uint8Array {
    return this.buf.slice(0, this.at);
  }
}

export class Reader {
  readonly view: DataView;

  constructor(
    readonly buf: Uint8Array,
    public at = 0,
  ) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  u8(): number {
    return this.buf[this.at++];
  }

  varint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      const b = this.buf[this.at++];
      v += (b & 127) * scale;
      if (b < 128) return v;
      scale *= 128;
    }
  }

  f64(): number {
    const v = this.view.getFloat64(this.at, true);
    this.at += 8;
    return v;
  }
}

export function readUint(buf: Uint8Array, at: number, w: number): number {
  let v = 0;
  for (let i = w - 1; i >= 0; i--) v = v * 256 + buf[at + i];
  return v;
}

/** A big-endian 32-bit half of 8 bytes, as a signed 32-bit number (int64Decimal's form). */
export function readBig(buf: Uint8Array, at: number, half: 0 | 4): number {
  const o = at + half;
  return (buf[o] << 24) | (buf[o + 1] << 16) | (buf[o + 2] << 8) | buf[o + 3] | 0;
}

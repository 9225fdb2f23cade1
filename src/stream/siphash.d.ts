/** The `siphash` package (SipHash-2-4 by libsodium's author) ships no types: what src/stream/keyed-key-hash.ts uses of it. */
declare module "siphash" {
  const SipHash: {
    /** key: four little-endian 32-bit words; returns the 64-bit hash as its high and low 32-bit halves */
    hash(key: Uint32Array, message: Uint8Array | string): { h: number; l: number };
  };
  export default SipHash;
}

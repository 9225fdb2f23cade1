/**
 * Partition routing. The hash is part of the stored state's layout: a key must
 * land on the same partition forever, so this function never changes.
 *
 * partitionFor(key, P) = murmur3_x86_32(utf8(key), seed 42) mod P (unsigned),
 * where `key` is the canonical key encoding from ./key.ts. Seed 42 is the one
 * Spark's HashPartitioning uses.
 */
const encoder = new TextEncoder();

/** One 4-byte block (or the tail) of murmur3_x86_32, scrambled. */
function scramble(k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, 0x1b873593);
}

/** The state after one block. */
const mixBlock = (h: number, k: number): number => {
  h ^= scramble(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
};

/** The length folded in, then the final avalanche. */
function finish(h: number, n: number): number {
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function murmur3(bytes: Uint8Array, seed = 0): number {
  let h = seed >>> 0;
  const n = bytes.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) h = mixBlock(h, bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
  let k = 0;
  switch (n & 3) {
    case 3:
      k ^= bytes[blocks + 2] << 16; // falls through
    case 2:
      k ^= bytes[blocks + 1] << 8; // falls through
    case 1:
      k ^= bytes[blocks];
      h ^= scramble(k);
  }
  return finish(h, n);
}

export const PARTITION_SEED = 42;

export function partitionFor(key: string, partitions: number): number {
  return murmur3Utf8(key, PARTITION_SEED) % partitions;
}

/**
 * murmur3(utf8(text), seed) without encoding, for the usual ASCII text (every
 * row's key is routed): four characters are a block as four bytes would be.
 * Text with any other character is encoded and hashed as bytes.
 */
export function murmur3Utf8(text: string, seed = 0): number {
  let h = seed >>> 0;
  const n = text.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    const b0 = text.charCodeAt(i),
      b1 = text.charCodeAt(i + 1),
      b2 = text.charCodeAt(i + 2),
      b3 = text.charCodeAt(i + 3);
    if ((b0 | b1 | b2 | b3) >= 0x80) return murmur3(encoder.encode(text), seed);
    h = mixBlock(h, b0 | (b1 << 8) | (b2 << 16) | (b3 << 24));
  }
  let k = 0;
  for (let i = n - 1; i >= blocks; i--) {
    const b = text.charCodeAt(i);
    if (b >= 0x80) return murmur3(encoder.encode(text), seed);
    k = (k << 8) | b;
  }
  if (n & 3) h ^= scramble(k);
  return finish(h, n);
}

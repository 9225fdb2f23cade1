import type { Lane } from "./sink";
import { coalesceRefs, formatRef, parseRef, type ObjectRef } from "./object-ref";
import { readObject } from "./sink";
import { manifestFolder } from "./manifest-layout";

/** A committed request's rows of one lane: still in the outbox (bytes), or a range of an R2 object. */
export type CommitPart = { seq: number } & ({ ref: string } | { bytes: Uint8Array });

/**
 * The bytes of committed parts, in commit order. Requests of one micro-batch
 * (or one outbox flush) lie back to back in one object, so adjacent ranges
 * become one read.
 */
export async function* readParts(bucket: R2Bucket, parts: readonly CommitPart[]): AsyncGenerator<Uint8Array> {
  const reads: (ObjectRef | Uint8Array)[] = [];
  for (const c of parts) {
    const last = reads[reads.length - 1];
    if ("bytes" in c) reads.push(c.bytes);
    else if (last && !(last instanceof Uint8Array)) reads.splice(-1, 1, ...coalesceRefs([last, parseRef(c.ref)]));
    else reads.push(parseRef(c.ref));
  }
  for (const r of reads) {
    if (r instanceof Uint8Array) {
      yield r;
      continue;
    }
    const body = await readObject(bucket, r);
    if (!body) throw new Error(`object ${r.key} is missing`);
    const reader = body.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) yield chunk.value;
  }
}

/** A manifest entry as src/output/publisher.ts writes it (late and rejected: from the release that forgets ids). */
interface ManifestEntry {
  fromSeq: number;
  toSeq: number;
  objects: ListedPart[];
  late?: ListedPart[];
  rejected?: ListedPart[];
}
type ListedPart = { seq: number; key: string; offset: number; length: number | null };

const MANIFEST_FIELD = { data: "objects", late: "late", rejected: "rejected" } as const;

/**
 * Pages of a lane's committed parts with seq in (afterSeq, upToSeq], in
 * commit order: from the committed manifest for the commits the ledger has
 * forgotten (below `indexedFrom`), then from the ledger's commit index
 * (`index`, pages of at most 100).
 */
export async function* committedPages(
  bucket: R2Bucket,
  where: { name: string; epoch: string; indexedFrom: number; shard?: number },
  /** the manifest lists data, late and rejected objects; for the other lanes indexedFrom is 0 (all in the index) */
  lane: Lane,
  afterSeq: number,
  upToSeq: number,
  index: (after: number, upTo: number, limit: number) => Promise<CommitPart[]>,
): AsyncGenerator<CommitPart[]> {
  let after = afterSeq;
  const fromManifest = Math.min(upToSeq, where.indexedFrom - 1);
  if (after < fromManifest) {
    const prefix = manifestFolder(where.name, where.epoch, where.shard ?? 0);
    let cursor: string | undefined;
    // Entries are named by their last commit, zero-padded: listing after `after`'s name starts at the entry that holds after + 1.
    let startAfter: string | undefined = `${prefix}${String(after).padStart(12, "0")}.json`;
    listing: do {
      const page = await bucket.list({ prefix, cursor, startAfter: cursor ? undefined : startAfter });
      for (const o of page.objects) {
        const body = await bucket.get(o.key);
        if (!body) continue;
        const entry = (await body.json()) as ManifestEntry;
        if (entry.fromSeq > fromManifest) break listing;
        const parts = (lane in MANIFEST_FIELD ? (entry[MANIFEST_FIELD[lane as keyof typeof MANIFEST_FIELD]] ?? []) : [])
          .filter((p) => p.seq > after && p.seq <= fromManifest)
          .map(
            (p): CommitPart => ({
              seq: p.seq,
              ref: formatRef({ key: p.key, ...(p.length === null ? {} : { range: { offset: p.offset, length: p.length } }) }),
            }),
          );
        if (parts.length > 0) yield parts;
        if (entry.toSeq >= fromManifest) break listing;
      }
      cursor = page.truncated ? page.cursor : undefined;
      startAfter = undefined;
    } while (cursor);
    after = fromManifest;
  }
  while (after < upToSeq) {
    const page = await index(after, upToSeq, 100);
    if (page.length === 0) return;
    yield page;
    after = page[page.length - 1].seq;
  }
}

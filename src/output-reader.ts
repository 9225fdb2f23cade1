import { coalesceRefs, parseRef, type ObjectRef } from "./microbatch/group";
import { readObject } from "./sink";

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

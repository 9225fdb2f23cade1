/** Where rows of a lane are written: an R2 object, a byte range of one, or a range of an outbox entry's lane. */
export interface ByteRange {
  offset: number;
  length: number;
}

const encoder = new TextEncoder();

/**
 * One body from the members' texts, in order, with where each member's part
 * lies (null for an empty part), so a reader of one member reads its range.
 */
export function concatParts(parts: readonly string[]): { body: Uint8Array; ranges: (ByteRange | null)[] } {
  const encoded = parts.map((p) => encoder.encode(p));
  const body = new Uint8Array(encoded.reduce((n, e) => n + e.length, 0));
  let offset = 0;
  const ranges = encoded.map((e) => {
    if (e.length === 0) return null;
    body.set(e, offset);
    const range = { offset, length: e.length };
    offset += e.length;
    return range;
  });
  return { body, ranges };
}

/** Where a request's rows of one lane are: an object, or a byte range of one (`key#offset+length`). */
export interface ObjectRef {
  key: string;
  range?: { offset: number; length: number };
}

export function formatRef(ref: ObjectRef): string {
  return ref.range ? `${ref.key}#${ref.range.offset}+${ref.range.length}` : ref.key;
}

export function parseRef(ref: string): ObjectRef {
  const m = /^(.*)#(\d+)\+(\d+)$/.exec(ref);
  return m ? { key: m[1], range: { offset: Number(m[2]), length: Number(m[3]) } } : { key: ref };
}

/** Adjacent ranges of one object become one read (the requests of a group are laid out back to back). */
export function coalesceRefs(refs: readonly ObjectRef[]): ObjectRef[] {
  const out: ObjectRef[] = [];
  for (const r of refs) {
    const last = out[out.length - 1];
    if (last?.range && r.range && last.key === r.key && last.range.offset + last.range.length === r.range.offset) {
      out[out.length - 1] = { key: last.key, range: { offset: last.range.offset, length: last.range.length + r.range.length } };
    } else out.push(r);
  }
  return out;
}

/**
 * The commit-index reference to a member's range of an outbox entry's lane
 * (`outbox:<entry>/<lane>#offset+length`; src/output/outbox.ts resolves it).
 * Pure, so that the commit plan (src/coordinator/commit-plan.ts) names it too.
 */
export function outboxRef(entry: number, lane: string, range: ByteRange): string {
  return formatRef({ key: `outbox:${entry}/${lane}`, range });
}

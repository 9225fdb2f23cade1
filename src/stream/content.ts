/**
 * What counts as the same event by content (DESIGN §11): a row's canonical
 * JSON (RFC 8785, ./jcs.ts) without some of its fields, and its SHA-256.
 * A content key is the hex SHA-256; a conflict digest (what the state keeps
 * per kept copy of an id-keyed stream) is its first 64 bits, as a signed
 * decimal integer like keyHash64, so that SQLite holds it exactly.
 *
 * Both run once per row, so the row is neither copied nor encoded on the way:
 * the left-out fields are skipped while the canonical text is written
 * (canonicalJson with an Omission), and the text is hashed from the string
 * (sha256Utf8). test/unit/stream/content-oracle.test.ts holds the results to the
 * first, copying version, bit for bit: the digests are stored.
 */
import { canonicalJson, type Omission } from "../lib/jcs";
import { sha256Utf8 } from "../lib/sha256";

export type { Omission } from "../lib/jcs";

const encoder = new TextEncoder();

/** Fields to leave out: dotted paths, or the Omission they make (omissionOf), worked out once per batch. */
export type Excluded = readonly string[] | Omission | null;

/**
 * The paths as a tree of their parts ("meta.attempt": `meta` → `attempt` →
 * null). A field left out whole stays out whatever deeper paths name inside
 * it, as deleting the paths one by one would leave it. null: none.
 */
export function omissionOf(paths: readonly string[]): Omission | null {
  if (paths.length === 0) return null;
  const root = new Map<string, Map<string, unknown> | null>();
  for (const path of paths) {
    let node = root;
    const parts = path.split(".");
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const at = node.get(part);
      if (at === null) break; // left out whole already
      if (i === parts.length - 1) {
        node.set(part, null);
        break;
      }
      let next = at as Map<string, Map<string, unknown> | null> | undefined;
      if (next === undefined) node.set(part, (next = new Map()));
      node = next;
    }
  }
  return root as Omission;
}

/** Paths as their Omission (an Omission as itself). */
export const omissionFrom = (excluded: Excluded): Omission | null =>
  excluded instanceof Map ? excluded : excluded === null ? null : omissionOf(excluded as readonly string[]);

/**
 * A copy of `row` without the fields named by `paths`: "received_at" is a
 * top-level field, "meta.attempt" the field `attempt` of the object at
 * `meta`. A path that isn't there removes nothing; the row is not changed.
 */
export function withoutFields(row: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  if (paths.length === 0) return row;
  const out: Record<string, unknown> = { ...row };
  for (const path of paths) removePath(out, path.split("."));
  return out;
}

function removePath(obj: Record<string, unknown>, parts: string[]): void {
  const [head, ...rest] = parts;
  if (!Object.hasOwn(obj, head)) return;
  if (rest.length === 0) {
    delete obj[head];
    return;
  }
  const next = obj[head];
  if (next === null || typeof next !== "object" || Array.isArray(next)) return;
  const copy = { ...(next as Record<string, unknown>) }; // copied on the way down: the caller's row stays whole
  obj[head] = copy;
  removePath(copy, rest);
}

/** The canonical JSON of `row` without `exclude`, as text. */
export function canonicalText(row: Record<string, unknown>, exclude: Excluded): string {
  return canonicalJson(row, omissionFrom(exclude));
}

/** The canonical JSON of `row` without `exclude`, as UTF-8. */
export function canonicalContent(row: Record<string, unknown>, exclude: Excluded): Uint8Array {
  return encoder.encode(canonicalText(row, exclude));
}

/** A content key: the hex SHA-256 of the row's canonical JSON without the excluded fields. */
export function contentHash(row: Record<string, unknown>, exclude: Excluded): string {
  const h = sha256Utf8(canonicalText(row, exclude));
  let hex = "";
  for (let i = 0; i < 8; i++) hex += (h[i] >>> 0).toString(16).padStart(8, "0");
  return hex;
}

/**
 * The fields a conflict never looks at: the stream's volatile ones and its
 * event-time column. Copies of an id that differ only in event time are
 * duplicates, as in Spark, whose dropDuplicatesWithinWatermark exists for
 * retries re-sent with another timestamp; a webhook row's `time` is likewise
 * the arrival time for providers that sign no time.
 */
export function conflictBlindFields(config: { volatile?: readonly string[]; eventTime: string | null }): string[] {
  return [...(config.volatile ?? []), ...(config.eventTime ? [config.eventTime] : [])];
}

/**
 * The 64-bit content digest of a row: the SHA-256's first 64 bits, signed, in
 * decimal. A partition keeps 32 of them per kept copy (digestWord).
 */
export function contentDigest(row: Record<string, unknown>, volatile: Excluded): string {
  const h = sha256Utf8(canonicalText(row, volatile));
  return int64Decimal(h[0], h[1]);
}

/**
 * The part of a digest a partition keeps and compares: its low 32 bits,
 * unsigned (of a 64-bit digest, or of one already kept, which it leaves as
 * it is). Two different contents share it with probability 2^-32: then a
 * changed copy counts as a plain duplicate, not a conflict (it is dropped
 * either way). It saves 4 bytes a key (docs/concepts/same-event.md).
 */
export function digestWord(digest: string): number {
  let x = 0;
  const negative = digest.charCodeAt(0) === 45; // "-"
  for (let i = negative ? 1 : 0; i < digest.length; i++) x = (x * 10 + (digest.charCodeAt(i) - 48)) % 4294967296;
  return negative && x !== 0 ? 4294967296 - x : x;
}

const pad7 = (n: number) => String(n).padStart(7, "0");

/**
 * hi·2^32 + lo read as a signed 64-bit integer, in decimal, without BigInt
 * (several times slower, per row): split into 24-bit limbs, gathered in base
 * 10^7 (2^24 = 10^7 + 6777216, 2^48 = 28147497·10^7 + 6710656).
 */
export function int64Decimal(hi: number, lo: number): string {
  let sign = "";
  if (hi & 0x80000000) {
    sign = "-";
    lo = (~lo + 1) >>> 0;
    hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
  } else hi >>>= 0;
  lo >>>= 0;
  const low = lo & 0xffffff;
  const mid = ((lo >>> 24) | (hi << 8)) & 0xffffff;
  const high = (hi >>> 16) & 0xffff;
  let a = low + mid * 6777216 + high * 6710656;
  let b = mid + high * 8147497;
  let c = high * 2;
  const base = 10_000_000;
  if (a >= base) {
    b += Math.floor(a / base);
    a %= base;
  }
  if (b >= base) {
    c += Math.floor(b / base);
    b %= base;
  }
  return sign + (c > 0 ? `${c}${pad7(b)}${pad7(a)}` : b > 0 ? `${b}${pad7(a)}` : String(a));
}

import { manifestKey } from "./manifest-layout";
import { parseRef } from "./object-ref";
import { readParts, type CommitPart } from "./reader";
import type { StreamConfig } from "../stream/config";
import { maxColumnsOf } from "../stream/table-fields";
import { partitionByOf, retainMsOf } from "../stream/table-options";
import { appendToTable, compactTable, r2Store, sweepExpired } from "../table";

/**
 * What external readers get of the committed output, published by the
 * Coordinator's alarm after commits (never on a request's path):
 *
 * - the Iceberg table (`"table": {"format": "iceberg"}`): committed rows
 *   appended in commit order; each snapshot records the last commit it holds,
 *   so an append retried after a crash is skipped by the table itself;
 * - the committed manifest of the NDJSON output: one entry per published
 *   range of commits, `streams/{stream}/_manifest/{epoch}/{last seq}.json`
 *   (shard k > 0 of a stream with several: `{epoch}.shard-{k}/`),
 *   listing the object ranges that hold exactly those commits' rows. Only
 *   what is committed and in R2 (not still in the outbox) is listed, so a
 *   reader that follows the manifest never sees an uncommitted object.
 */
export interface PublishContext {
  stream: string;
  epoch: string;
  /** which ingest shard publishes (its own commits; absent: 0) */
  shard?: number;
  config: StreamConfig;
  bucket: R2Bucket;
  lastSeq: number;
  /** committed parts of the data lane with seq in (after, upTo], at most `limit` */
  commits(after: number, upTo: number, limit: number): CommitPart[];
  /** the same for the late and rejected lanes: the manifest lists them too (so /output can read it once the ledger forgets) */
  laneCommits?(lane: "late" | "rejected", after: number, upTo: number, limit: number): CommitPart[];
  /** how far a publication has got (0: not started), kept by the Coordinator */
  progress(what: "table" | "manifest"): number;
  setProgress(what: "table" | "manifest", seq: number): void;
  /** when this shard's next table expiry journal is due (0: none known), kept by the Coordinator */
  sweepAt(): number;
  setSweepAt(at: number): void;
}

/** How far each publication has got, in the Coordinator's SQLite. */
export const PUBLISHED_TABLE = "CREATE TABLE IF NOT EXISTS published (what TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;";
export { manifestFolder, manifestKey } from "./manifest-layout";
export {
  PUBLISH_FAILURES_TABLE,
  PublishGuard,
  publishRetryDelay,
  tablePublishingOf,
  type Publication,
  type PublishFailure,
  type TablePublishing,
} from "./publish-guard";

/** Commits per table append (one Parquet file each). */
const COMMITS_PER_APPEND = 2_000;
/** Compaction rewrites a partition's small data files once there are this many. */
const COMPACT_MIN_FILES = 8;
/** A sweep reads every retained snapshot's manifest list: at most one this often (or each `retain`, if shorter). */
const SWEEP_EVERY_MS = 10 * 60_000;

/**
 * Appends the commits not yet in the table, compacts it, and deletes the
 * files of expired snapshots once due (src/table/expiry.ts). `columns`: the
 * table's columns after the last append that changed them (the Coordinator
 * counts them for the ingest column cap); `droppedFields`: fields the table
 * left out.
 */
export async function publishTable(ctx: PublishContext, now: number): Promise<{ appended: number; columns?: string[]; droppedFields?: string[] }> {
  const table = ctx.config.table;
  if (!table) return { appended: 0 };
  const store = r2Store(ctx.bucket);
  let done = ctx.progress("table");
  let appended = 0;
  const retainMs = retainMsOf(ctx.config);
  let sweepAt = ctx.sweepAt();
  const due = (at: number | undefined) => {
    if (at !== undefined) sweepAt = sweepAt === 0 ? at : Math.min(sweepAt, at);
  };
  let columns: string[] | undefined;
  const dropped = new Set<string>();
  while (done < ctx.lastSeq) {
    const page = ctx.commits(done, ctx.lastSeq, COMMITS_PER_APPEND);
    // Commits without output rows have no part: the append covers them too.
    const upTo = page.length === COMMITS_PER_APPEND ? page[page.length - 1].seq : ctx.lastSeq;
    const rows = await rowsOf(ctx.bucket, page);
    const result = await appendToTable(store, {
      stream: ctx.stream,
      schema: ctx.config.schema,
      rows,
      commitSeq: upTo,
      now,
      baseUri: table.location,
      maxColumns: maxColumnsOf(ctx.config),
      partitionBy: partitionByOf(ctx.config),
      eventTime: ctx.config.eventTime,
      retainMs,
    });
    due(result.sweepAt);
    columns = result.columns ?? columns;
    for (const f of result.droppedFields ?? []) dropped.add(f);
    ctx.setProgress("table", upTo);
    done = upTo;
    appended++;
  }
  // Small files are rewritten once enough of them pile up (compactTable decides; a no-op otherwise).
  if (appended > 0) due((await compactTable(store, ctx.stream, { minFiles: COMPACT_MIN_FILES, targetBytes: 8 * 1024 * 1024, now, retainMs })).sweepAt);
  const before = ctx.sweepAt();
  if (sweepAt !== 0 && sweepAt <= now) {
    const swept = await sweepExpired(store, ctx.stream, now, retainMs);
    sweepAt = swept.nextDue === null ? 0 : Math.max(swept.nextDue, now + Math.min(retainMs, SWEEP_EVERY_MS));
  }
  if (sweepAt !== before) ctx.setSweepAt(sweepAt);
  if (dropped.size > 0) console.warn(`table ${ctx.stream}: left out ${dropped.size} field(s) that cannot be columns or exceed maxColumns`);
  return { appended, ...(columns ? { columns } : {}), ...(dropped.size > 0 ? { droppedFields: [...dropped] } : {}) };
}

export async function publishManifest(ctx: PublishContext): Promise<{ entries: number }> {
  let done = ctx.progress("manifest");
  let entries = 0;
  while (done < ctx.lastSeq) {
    const page = ctx.commits(done, ctx.lastSeq, COMMITS_PER_APPEND);
    // Stop before the first part still in the outbox: it is listed once flushed.
    const waiting = page.findIndex((p) => "bytes" in p);
    let upTo = waiting >= 0 ? page[waiting].seq - 1 : page.length === COMMITS_PER_APPEND ? page[page.length - 1].seq : ctx.lastSeq;
    // The other lanes' parts of the same commits, cut the same way.
    const lanes = ctx.laneCommits ? (["late", "rejected"] as const).map((lane) => ctx.laneCommits!(lane, done, upTo, COMMITS_PER_APPEND)) : [];
    for (const parts of lanes) {
      const w = parts.findIndex((p) => "bytes" in p);
      if (w >= 0) upTo = Math.min(upTo, parts[w].seq - 1);
      else if (parts.length === COMMITS_PER_APPEND) upTo = Math.min(upTo, parts[parts.length - 1].seq);
    }
    if (upTo <= done) break;
    const listed = (parts: CommitPart[]) =>
      parts.flatMap((p) => {
        if (!("ref" in p) || p.seq > upTo) return [];
        const r = parseRef(p.ref);
        return [{ seq: p.seq, key: r.key, offset: r.range?.offset ?? 0, length: r.range?.length ?? null }];
      });
    const [late, rejected] = lanes.map(listed);
    const entry = {
      stream: ctx.stream,
      fromSeq: done + 1,
      toSeq: upTo,
      objects: listed(page),
      ...(late?.length ? { late } : {}),
      ...(rejected?.length ? { rejected } : {}),
    };
    await ctx.bucket.put(manifestKey(ctx.stream, ctx.epoch, upTo, ctx.shard ?? 0), JSON.stringify(entry), {
      onlyIf: { etagDoesNotMatch: "*" },
      httpMetadata: { contentType: "application/json" },
    });
    ctx.setProgress("manifest", upTo);
    done = upTo;
    entries++;
  }
  return { entries };
}

async function rowsOf(bucket: R2Bucket, page: readonly CommitPart[]): Promise<Record<string, unknown>[]> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const bytes of readParts(bucket, page)) text += decoder.decode(bytes, { stream: true });
  text += decoder.decode();
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

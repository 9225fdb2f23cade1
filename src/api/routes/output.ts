import { z } from "zod";
import { coordinatorStub } from "../../env";
import { committedPages, readParts } from "../../output/reader";
import type { Lane } from "../../output/sink";
import { route, type Ctx } from "../route";
import { intIn, intQuery, missing, STREAM } from "./shared";
import { badRequest } from "../../http/problem";
import { formatCursor, parseCursor } from "../../stream/shard-cursor";
import { seqBase, shardList, shardsOf } from "../../stream/shards";

/** ?after= of the NDJSON lanes: X-Commit-Seq of the last read says where to resume. */
const laneQuery = z.object({
  after: intIn(0, Number.MAX_SAFE_INTEGER)
    .default(0)
    .describe(
      "the commit seq to read after (the X-Commit-Seq of the last read); 0 reads from the start. A stream with several shards takes X-Commit-Seq as it came: one commit seq per shard, comma-separated",
    ),
});
const commitSeqHeader = { "X-Commit-Seq": "the last commit this read covers (one per shard, comma-separated, with several): pass it as ?after= to read on" };

// The committed output (and the late and rejected lanes) as NDJSON, batch after
// batch in commit order; pages of the commit index keep memory flat. A stream
// with several shards is read shard after shard (0 first), each in its commit order.
function readLane(lane: Lane) {
  return async (c: Ctx) => {
    const stream = c.get("stream");
    const first = coordinatorStub(c.env, stream);
    const where0 = await first.locate();
    if (!where0) throw missing(stream);
    const shards = shardsOf(where0.config);
    // One number, as the document says (its bounds checked as any whole-number query's); several shards also take a list.
    const raw = c.req.query("after");
    const listed = raw?.includes(",") ?? false;
    const cursor = parseCursor(listed ? raw : String(intQuery(c, laneQuery, "after")), shards);
    if (!cursor.ok) throw badRequest(cursor.detail);
    const stubs = shardList(shards).map((k) => (k === 0 ? first : coordinatorStub(c.env, stream, k)));
    // A snapshot: each shard's commits up to its last one now; X-Commit-Seq tells the reader where to resume.
    const wheres = [where0, ...(await Promise.all(stubs.slice(1).map((s) => s.locate())))];
    const bucket = c.env.SINK;
    const shardPages = wheres.map((where, k) => {
      if (!where) throw missing(stream); // a shard not there: the stream is being deleted
      // Commits the ledger has forgotten are read from the committed manifest (src/output/reader.ts); the
      // conflicts and duplicates lanes keep an index of their own (src/coordinator/lane-refs.ts) and read it all.
      const indexedFrom = lane === "conflicts" || lane === "duplicates" ? seqBase(k) : where.indexedFrom;
      return committedPages(bucket, { ...where, indexedFrom }, lane, cursor.after[k], where.lastSeq, (a, u, l) => stubs[k].commits(lane, a, u, l));
    });
    let k = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (; k < shardPages.length; k++) {
          const page = await shardPages[k].next();
          if (page.done) continue;
          for await (const bytes of readParts(bucket, page.value)) controller.enqueue(bytes);
          return;
        }
        controller.close();
      },
    });
    const upTo = formatCursor(wheres.map((w) => w!.lastSeq));
    return new Response(body, { headers: { "content-type": "application/x-ndjson; charset=utf-8", "x-commit-seq": upTo } });
  };
}

export const output = route({
  method: "get",
  path: `${STREAM}/output`,
  summary: "Committed output rows in commit order",
  tag: "output",
  auth: "admin",
  request: { query: laneQuery },
  responses: { 200: { media: "application/x-ndjson", description: "rows", headers: commitSeqHeader } },
  handler: readLane("data"),
});

export const late = route({
  method: "get",
  path: `${STREAM}/late`,
  summary: "The late lane: rows dropped by the watermark",
  tag: "output",
  auth: "admin",
  request: { query: laneQuery },
  responses: { 200: { media: "application/x-ndjson", description: "late rows with the watermark they met", headers: commitSeqHeader } },
  handler: readLane("late"),
});

export const rejected = route({
  method: "get",
  path: `${STREAM}/rejected`,
  summary: "The rejected lane: rows that failed validation",
  tag: "output",
  auth: "admin",
  request: { query: laneQuery },
  responses: { 200: { media: "application/x-ndjson", description: "rejected rows as sent, with the error", headers: commitSeqHeader } },
  handler: readLane("rejected"),
});

export const conflicts = route({
  method: "get",
  path: `${STREAM}/conflicts`,
  summary: "The conflicts lane: copies of a remembered id whose content differs from the kept copy's",
  tag: "output",
  auth: "admin",
  description:
    "One line each: `{batchId, source, index, verdict: dropped | rejected, kept: {batchId, source, seq}, row}`; volatile fields are ignored when comparing.",
  request: { query: laneQuery },
  responses: { 200: { media: "application/x-ndjson", description: "conflicting rows with the kept copy's reference", headers: commitSeqHeader } },
  handler: readLane("conflicts"),
});

export const duplicates = route({
  method: "get",
  path: `${STREAM}/duplicates`,
  summary: "The duplicates lane: every dropped copy, with keepDuplicates",
  tag: "output",
  auth: "admin",
  description: 'One line each: `{batchId, source, index, kept: {batchId, source, seq}, row}`; empty unless the stream has `"keepDuplicates": true`.',
  request: { query: laneQuery },
  responses: { 200: { media: "application/x-ndjson", description: "dropped copies with the kept copy's reference", headers: commitSeqHeader } },
  handler: readLane("duplicates"),
});

export const routes = [output, late, rejected, conflicts, duplicates];

import { z } from "zod";
import { coordinatorStub, type Env } from "../../env";
import type { StreamConfig } from "../../stream/config";
import { partitionByOf, retainMsOf } from "../../stream/table-options";
import { r2Store, readTableFile, readTableSnapshot, TABLE_FILE_PATH, tableFiles, tableLayout, tableRetention } from "../../table";
import { partitionProblem } from "../../table/partitioning";
import { currentSchema } from "../../table/metadata";
import { badRequest, notFound } from "../../http/problem";
import { route } from "../route";
import { tableSnapshotSchema } from "../table-snapshot-schema";
import { missing, STREAM } from "./shared";

/** A 404 unless the stream exists and has a table; its config read where it is kept (no partition is called). */
async function mustHaveTable(env: Env, stream: string): Promise<StreamConfig> {
  const at = await coordinatorStub(env, stream).locate();
  if (!at) throw missing(stream);
  if (!at.config.table) throw notFound(`stream "${stream}" has no table; set "table": {"format": "iceberg"} in its config`);
  return at.config;
}

// The Iceberg table's current snapshot, as Iceberg writes it, and where its metadata is.
export const table = route({
  method: "get",
  path: `${STREAM}/table`,
  summary: "The Iceberg table's current snapshot",
  tag: "output",
  auth: "admin",
  description: "404 when the stream has no table or no snapshot yet.",
  responses: {
    200: { schema: tableSnapshotSchema, description: "{stream, metadataLocation, snapshot, files, partitionBy, partitionSpec, specs, partitions, retention}" },
  },
  handler: async (c) => {
    const stream = c.get("stream");
    const config = await mustHaveTable(c.env, stream);
    const [current, publishing] = await Promise.all([readTableSnapshot(r2Store(c.env.SINK), stream), coordinatorStub(c.env, stream).tablePublishing()]);
    const failing = publishing?.lastError ? `; appending to it fails (retried with backoff): ${publishing.lastError}` : "";
    if (!current) throw notFound(`the table of stream "${stream}" has no snapshot yet: committed output is appended within seconds${failing}`);
    // A table that cannot be read whole (what publishing reports) still answers with its snapshot.
    const files = await tableFiles(r2Store(c.env.SINK), stream, current).catch(() => null);
    const partitionBy = partitionByOf(config);
    const schema = currentSchema(current.table);
    const note = schema && partitionProblem(schema, partitionBy, config.eventTime);
    return c.json({
      stream,
      metadataLocation: current.metadataLocation,
      snapshot: current.snapshot,
      files,
      partitionBy,
      ...tableLayout(current, files),
      ...(note ? { partitionNote: `new files are not partitioned by ${partitionBy}: ${note}` } : {}),
      retention: tableRetention(current, retainMsOf(config)),
      ...(publishing ? { publishing } : {}),
    });
  },
});

// One file of the table, as stored: a reader without R2 credentials or a network (the local server) takes the Parquet files GET …/table lists.
export const tableFile = route({
  method: "get",
  path: `${STREAM}/table/file`,
  summary: "One file of the Iceberg table (a data file GET …/table lists, or a metadata file)",
  tag: "output",
  auth: "admin",
  description: "`?path=data/…` as `files[].path` names it (or `metadata/…`). 400 for a path outside the table, 404 when there is no such file.",
  request: { query: z.object({ path: z.string().describe("the file's path inside the table, e.g. data/append-1-….parquet") }) },
  responses: { 200: { media: "application/octet-stream", description: "the file's bytes (Parquet, Avro or JSON)" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const path = c.req.query("path") ?? "";
    if (!TABLE_FILE_PATH.test(path))
      throw badRequest(
        `path must be a file of the table: data/<name> or metadata/<name> (as GET …/table's files[].path), not ${JSON.stringify(path.slice(0, 200))}`,
      );
    await mustHaveTable(c.env, stream);
    const bytes = await readTableFile(r2Store(c.env.SINK), stream, path);
    if (!bytes) throw notFound(`the table of stream "${stream}" has no file ${path}`);
    return new Response(bytes, { headers: { "content-type": "application/octet-stream", "content-length": String(bytes.length) } });
  },
});

export const routes = [table, tableFile];

import { coordinatorStub } from "../../env";
import { r2Store, readTableSnapshot } from "../../table";
import { notFound } from "../../http/problem";
import { route } from "../route";
import { tableSnapshotSchema } from "../schemas";
import { missing, STREAM } from "./shared";

// The Iceberg table's current snapshot, as Iceberg writes it, and where its metadata is.
export const table = route({
  method: "get",
  path: `${STREAM}/table`,
  summary: "The Iceberg table's current snapshot",
  tag: "output",
  auth: "admin",
  description: "404 when the stream has no table or no snapshot yet.",
  responses: { 200: { schema: tableSnapshotSchema, description: "{stream, metadataLocation, snapshot}" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const d = await coordinatorStub(c.env, stream).describe();
    if (!d) throw missing(stream);
    if (!d.config.table) throw notFound(`stream "${stream}" has no table; set "table": {"format": "iceberg"} in its config`);
    const [current, publishing] = await Promise.all([readTableSnapshot(r2Store(c.env.SINK), stream), coordinatorStub(c.env, stream).tablePublishing()]);
    const failing = publishing?.lastError ? `; appending to it fails (retried with backoff): ${publishing.lastError}` : "";
    if (!current) throw notFound(`the table of stream "${stream}" has no snapshot yet: committed output is appended within seconds${failing}`);
    return c.json({ stream, metadataLocation: current.metadataLocation, snapshot: current.snapshot, ...(publishing ? { publishing } : {}) });
  },
});

export const routes = [table];

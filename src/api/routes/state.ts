import { undrained, type RescaleState } from "../../rescale/state";
import { ownerOf } from "../../stream/partition-map";
import { withReceipts } from "../receipts";
import type { StoredReceipt } from "../../stream/receipt";
import { z } from "zod";
import { coordinatorStub, partitionStub } from "../../env";
import { locateRow } from "../../stream/locate";
import type { StreamConfig } from "../../stream/config";
import { badRequest } from "../../http/problem";
import { isProviderType, PROVIDER_TYPES, type ProviderType } from "../../webhooks";
import { route } from "../route";
import { statePageSchema } from "../schemas";
import { intIn, intParam, intQuery, missing, STREAM } from "./shared";

const stateQuery = z.object({
  partition: z.number().int().min(0).optional().describe("the partition: 0 to the stream's `partitions` - 1; required unless `row` is given"),
  limit: intIn(1, 10_000).default(1000).describe("keys per page"),
  after: z.string().optional().describe("the key to list after: the last key of the previous page"),
  row: z
    .string()
    .optional()
    .describe(
      "a row as JSON, as ingest would take it: its key columns (and its event time in mode event-time-key; a content key's row whole); lists just its key, if remembered, from the partition it routes to (`partition` may then be left out); how a stream with hashed keys is asked about one key",
    ),
  provider: z
    .enum(PROVIDER_TYPES as [ProviderType, ...ProviderType[]])
    .optional()
    .describe(
      "with `row`: key it as a row that came through this provider's webhook (a content key then leaves out what that provider's redeliveries change, as ingest did)",
    ),
});

export const state = route({
  method: "get",
  path: `${STREAM}/state`,
  summary: "The keys one partition remembers",
  tag: "operate",
  auth: "admin",
  description: "Each key with its `expiresAt`, like Spark's state reader. A stream with `stateKeys: \"hashed\"` lists `#` and the key's 64-bit hash in hex.",
  request: { query: stateQuery },
  responses: { 200: { schema: statePageSchema, description: "{partition, watermark, rows, bytes, keys}" } },
  handler: async (c) => {
    // Bad input is answered before the Coordinator is asked.
    const provider = c.req.query("provider");
    if (provider !== undefined && !isProviderType(provider)) throw badRequest(`provider must be one of ${PROVIDER_TYPES.join(", ")}`);
    if (provider !== undefined && c.req.query("row") === undefined) throw badRequest("provider goes with row");
    const where = await coordinatorStub(c.env, c.get("stream")).locate();
    if (!where) throw missing(c.get("stream"));
    const given = intParam(c.req.query("partition"), "partition", NaN, 0, where.partitions - 1);
    // ?row=: is this row's key remembered? Keyed and routed exactly as ingest does (a hashed stream's only way to ask by key).
    const probe = c.req.query("row") === undefined ? null : stateKeyOfRow(where.config, c.req.query("row")!, provider);
    const partition = probe ? probe.partition : given;
    if (Number.isNaN(partition)) throw badRequest(`partition is required: 0..${where.partitions - 1}`);
    if (probe && !Number.isNaN(given) && given !== probe.partition) throw badRequest(`the row's key is in partition ${probe.partition}, not ${given}`);
    const limit = intQuery(c, stateQuery, "limit");
    const after = c.req.query("after") ?? "";
    const stub = partitionStub(c.env, where.name, partition, where.mapVersion);
    const [stats, found] = await Promise.all([
      stub.describe(where.epoch),
      probe ? stub.lookup(where.epoch, probe.stateKey) : stub.list(where.epoch, after, limit),
    ]);
    // During a rescale a key not yet moved is still where the old map put it (src/rescale/).
    const old = probe && found.length === 0 && where.rescale ? oldOwner(where.rescale, probe.routingKey) : null;
    const keys = old === null ? found : await partitionStub(c.env, where.name, old, where.rescale!.from.version).lookup(where.epoch, probe!.stateKey);
    // Asked by row: the remembered key's receipt (src/api/receipts.ts).
    const answered = probe
      ? await withReceipts((k) => coordinatorStub(c.env, c.get("stream"), k), where.config, where.shardChange, keys as unknown as StoredReceipt[])
      : keys;
    return c.json({ partition, watermark: stats.watermark, rows: stats.rows, bytes: stats.bytes, keys: answered });
  },
});

/** A row given to the state reader: its state key and partition, or a 400 saying why it has none (src/stream/locate.ts). */
function stateKeyOfRow(config: StreamConfig, text: string, provider?: ProviderType): { stateKey: string; partition: number; routingKey: string } {
  // A provider webhook's batch ids are `<provider>:…` (src/webhooks/provider.ts): keyed as that provider's rows are.
  const where = locateRow(config, text, Date.now(), provider === undefined ? undefined : `${provider}:`);
  if ("error" in where) throw badRequest(where.error);
  return where;
}

/** The old partition that may still hold a key during a rescale (null: it is drained). */
function oldOwner(r: RescaleState, routingKey: string): number | null {
  const p = ownerOf(routingKey, { partitions: r.from.partitions });
  return undrained(r).includes(p) ? p : null;
}

export const routes = [state];

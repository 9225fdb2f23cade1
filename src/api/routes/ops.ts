import { z } from "zod";
import { coordinatorStub } from "../../env";
import { streamHealth } from "../stream-health";
import { route } from "../route";
import { adviceSchema, healthSchema, progressSchema } from "../schemas";
import { intIn, intQuery, missing, STREAM } from "./shared";

const progressQuery = z.object({ limit: intIn(1, 1000).default(100).describe("how many of the most recent reports") });

// Operating one stream: what its batches did, its health, the delay advisor.
export const progress = route({
  method: "get",
  path: `${STREAM}/progress`,
  summary: "Recent per-batch progress reports",
  tag: "operate",
  auth: "admin",
  request: { query: progressQuery },
  responses: { 200: { schema: progressSchema, description: "oldest first" } },
  handler: async (c) => {
    const limit = intQuery(c, progressQuery, "limit");
    const coordinator = coordinatorStub(c.env, c.get("stream"));
    if (!(await coordinator.locate())) throw missing(c.get("stream"));
    return c.json({ progress: await coordinator.progress(limit) });
  },
});

// The delay advisor's figures, live (src/stream/advisor/live.ts): what `edge-dedup advise` says of a history, over what this stream received.
export const advice = route({
  method: "get",
  path: `${STREAM}/advice`,
  summary: "The delay advisor, live: duplicate gaps and disorder per source, the recommended watermarkDelay",
  tag: "operate",
  auth: "admin",
  description: "The figures `edge-dedup advise` computes over a file, kept by the stream at each commit.",
  responses: { 200: { schema: adviceSchema, description: "per source and overall" } },
  handler: async (c) => {
    const stream = c.get("stream");
    const advice = await coordinatorStub(c.env, stream).advice();
    if (!advice) throw missing(stream);
    return c.json({ stream, ...advice });
  },
});

export const health = route({
  method: "get",
  path: `${STREAM}/health`,
  summary: "ok | warn | critical, with reasons and the source holding the watermark back",
  tag: "operate",
  auth: "admin",
  description: "`status`, `reasons`, `heldBackBy` and the figures behind them.",
  responses: { 200: { schema: healthSchema, description: "the stream's health" } },
  handler: async (c) => {
    const health = await streamHealth(c.env, c.get("stream"));
    if (!health) throw missing(c.get("stream"));
    return c.json(health);
  },
});

export const routes = [progress, advice, health];

import { z } from "zod";
import { NAME_PATTERN } from "../../stream/name-rule";
import { ingest } from "../ingest";
import { route } from "../route";
import { outcomeSchema } from "../schemas";
import { STREAM } from "./shared";

// Ingest reads the raw body itself, after admitting the caller from its headers (src/api/ingest.ts): nothing here parses it first.
export const postEvents = route({
  method: "post",
  path: `${STREAM}/events`,
  summary: "Ingest one batch (JSON object, array or NDJSON)",
  tag: "ingest",
  auth: "ingest",
  description:
    "Retrying with the same body, `Idempotency-Key` and `X-Source` is always safe. A body that can't be parsed is a 400 and changes nothing; rows that fail validation are rejected by index and the rest goes ahead.",
  request: {
    headers: z.object({
      "X-Source": z.string().regex(NAME_PATTERN).default("default").describe("the batch's source"),
      "Idempotency-Key": z
        .string()
        .regex(/^[\x21-\x7e]{1,255}$/)
        .optional()
        .describe(
          "the batch id, scoped per source; generated (and answered in the response header) when left out. Ids starting with the other ingresses' prefixes (`stripe:`, `github:`, `shopify:`, `standard-webhooks:`, `r2:`, `r2h:`, `q:`, `qid:`) are refused with a 400",
        ),
      "Content-Type": z
        .string()
        .optional()
        .describe("`application/x-ndjson` (or `application/jsonl`, `application/x-jsonlines`) for NDJSON; anything else is parsed as JSON"),
    }),
    body: z.union([z.record(z.string(), z.unknown()), z.array(z.record(z.string(), z.unknown()))]).describe("one row, or an array of rows"),
    bodyMedia: ["application/x-ndjson"],
  },
  responses: {
    200: {
      schema: outcomeSchema,
      description: "the batch's outcome (replayed: true for a committed batch id)",
      headers: { "Idempotency-Key": "the batch id" },
    },
  },
  handler: async (c) => {
    const { outcome, batchId, headers } = await ingest(c.env, c.get("stream"), c.req.raw);
    return c.json(outcome, 200, { ...headers, "idempotency-key": batchId });
  },
});

export const routes = [postEvents];

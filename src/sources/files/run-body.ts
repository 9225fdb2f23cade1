import { z } from "zod";
import { NAME_PATTERN } from "../../stream/config";

/**
 * The body of POST /v1/streams/{stream}/runs. Its own module, free of
 * Workers types, so that the OpenAPI document (src/api/openapi.ts) and the
 * Node-side reference generator can import it without the routes.
 */
export const runBody = z.strictObject({
  prefix: z.string().max(1024),
  source: z.string().regex(NAME_PATTERN, "1-64 characters: letters, digits, '_', '.', '-'").optional(),
});

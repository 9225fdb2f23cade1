import { z } from "zod";
import { NAME_PATTERN, NAME_RULE } from "../../stream/name-rule";

/** Files per micro-batch at most (Spark's maxFilesPerTrigger): one Coordinator call carries them. */
export const MAX_FILES_PER_TRIGGER = 100;

/**
 * The body of POST /v1/streams/{stream}/runs. Its own module, free of
 * Workers types, so that the OpenAPI document (src/api/openapi.ts) and the
 * Node-side reference generator can import it without the routes. The
 * options are Spark's file-source options where they fit (DESIGN §7).
 */
export const runBody = z
  .strictObject({
    prefix: z.string().max(1024),
    source: z.string().regex(NAME_PATTERN, NAME_RULE).optional(),
    multiLine: z
      .boolean()
      .optional()
      .describe("true: each .json file is one JSON document; false: JSON Lines only; absent: JSON Lines unless the file is one document"),
    maxFilesPerTrigger: z.number().int().min(1).max(MAX_FILES_PER_TRIGGER).optional().describe("files per micro-batch (one commit); default 1"),
    cleanSource: z
      .enum(["off", "archive", "delete"])
      .optional()
      .describe("after a file's commit: leave it (off, the default), move it under sourceArchiveDir, or delete it"),
    sourceArchiveDir: z.string().min(1).max(512).optional().describe("where archive moves files: {sourceArchiveDir}{key}; must not overlap the prefix"),
  })
  .superRefine((b, ctx) => {
    if (b.cleanSource === "archive" && b.sourceArchiveDir === undefined) {
      ctx.addIssue({ code: "custom", path: ["sourceArchiveDir"], message: 'required with "cleanSource": "archive"' });
    }
    if (b.sourceArchiveDir !== undefined && b.cleanSource !== "archive") {
      ctx.addIssue({ code: "custom", path: ["sourceArchiveDir"], message: 'only with "cleanSource": "archive"' });
    }
    // An archived key must never be listed by a run over the prefix again (it would be a new file).
    const dir = b.sourceArchiveDir;
    if (dir !== undefined && (dir.startsWith(b.prefix) || b.prefix.startsWith(dir))) {
      ctx.addIssue({ code: "custom", path: ["sourceArchiveDir"], message: "must not overlap the prefix (neither may begin with the other)" });
    }
  });

export type RunBody = z.infer<typeof runBody>;
/** What a run keeps of its body besides prefix and source. */
export type RunOptions = Omit<RunBody, "prefix" | "source">;

import { archiveKey } from "./plan";
import type { Run } from "./runs";

/**
 * cleanSource after a file's commit (Spark's, best effort: an object that
 * changed since it was read, or a crash before this, stays where it is; a
 * later run skips it as ingested). R2 has no rename: archive is copy, then delete.
 */
export async function cleanSource(input: R2Bucket, run: Pick<Run, "id" | "options">, key: string, etag: string): Promise<void> {
  const how = run.options.cleanSource ?? "off";
  if (how === "off") return;
  try {
    const obj = await input.get(key, { onlyIf: { etagMatches: etag } });
    if (obj === null || !("body" in obj)) return; // gone or changed: not ours to clean
    if (how === "archive") {
      await input.put(archiveKey(run.options.sourceArchiveDir!, key), obj.body, {
        httpMetadata: obj.httpMetadata,
        customMetadata: obj.customMetadata,
      });
    } else await obj.body.cancel();
    const still = await input.head(key);
    if (still && still.etag === etag) await input.delete(key);
  } catch (e) {
    console.warn(`run ${run.id}: cleanSource ${how} of ${key}: ${e instanceof Error ? e.message : e}; left in place`);
  }
}

import { formatRef, type ByteRange } from "../microbatch/group";

/**
 * The commit-index reference to a member's range of an outbox entry's lane
 * (`outbox:<entry>/<lane>#offset+length`; src/output/outbox.ts resolves it).
 * Pure, so that the commit plan (src/coordinator/commit-plan.ts) names it too.
 */
export function outboxRef(entry: number, lane: string, range: ByteRange): string {
  return formatRef({ key: `outbox:${entry}/${lane}`, range });
}

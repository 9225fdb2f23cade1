/** The partitions' figures as the answers show them: the state totals, and health's capacity. */
import { z } from "zod";

/** The partitions' state totals (GET of one stream asks every partition; a list, as they last reported). */
export const stateTotals = z.object({
  rows: z.number().int(),
  bytes: z.number().int(),
  unkeyedHashPartitions: z
    .number()
    .int()
    .optional()
    .describe('stateKeys "hashed": partitions that store keys by the unkeyed hash of an earlier release (health warns)'),
  largestPartitionBytes: z.number().int().optional().describe("the largest partition's storage bytes (GET of one stream)"),
});

/** Health's partition figures (src/stream/partition-capacity.ts): what it judged, and the count to take. */
export const partitionCapacitySchema = z.object({
  partitions: z.number().int(),
  largestPartitionBytes: z.number().int(),
  callsPerSecondEach: z.number().nullable().describe("calls a second to each partition over the recent window, at most (null: too few commits)"),
  proposedPartitions: z
    .number()
    .int()
    .nullable()
    .describe('the count to PATCH to ({"partitions": N}) when a partition nears its storage limit or call rate; null: none needed'),
});

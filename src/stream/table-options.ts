import { z } from "zod";
import { intervalField } from "./interval-field";
import { DEFAULT_MAX_COLUMNS, MAX_COLUMNS_LIMIT } from "./table-fields";

/**
 * A stream's table options that shape its files and their lifetime (DESIGN
 * §7), resolved from the config: how data files are partitioned by event
 * time, and how long a replaced snapshot stays readable; and the config's
 * `table` field. Typed by shape: config.ts imports this module.
 */
export const PARTITION_BY = ["day", "hour", "none"] as const;
export type PartitionBy = (typeof PARTITION_BY)[number];

/** A replaced snapshot stays readable (its files kept) this long by default: Iceberg's 5 days, rounded to a week. */
export const DEFAULT_RETAIN_MS = 7 * 86_400_000;
export const MIN_RETAIN_MS = 1_000;
export const MAX_RETAIN_MS = 365 * 86_400_000;

interface TableOptions {
  eventTime: string | null;
  table?: { partitionBy?: PartitionBy; retain?: number };
}

/** The partitioning new data files get: the config's, else by day of the event time (none when the stream has no event time). */
export function partitionByOf(config: TableOptions): PartitionBy {
  return config.table?.partitionBy ?? (config.eventTime === null ? "none" : "day");
}

export function retainMsOf(config: TableOptions): number {
  return config.table?.retain ?? DEFAULT_RETAIN_MS;
}

/** The config's `table`; that partitioning needs an event-time column is checked with the whole config. */
export const tableConfigSchema = z.strictObject({
  format: z.literal("iceberg"),
  location: z.string().min(1).max(1024).optional().describe("the base URI external readers use"),
  maxColumns: z
    .number()
    .int()
    .min(1)
    .max(MAX_COLUMNS_LIMIT)
    .optional()
    .describe(`the most columns the table may have (default ${DEFAULT_MAX_COLUMNS}); a row that would add more is rejected`),
  partitionBy: z
    .enum(PARTITION_BY)
    .optional()
    .describe(
      'data files by Iceberg\'s day or hour transform of the event-time column, or "none"; default "day" (global mode: "none"); a change applies to new files',
    ),
  retain: intervalField
    .refine((ms) => ms >= MIN_RETAIN_MS && ms <= MAX_RETAIN_MS, 'must be at least "1 second" and at most "365 days"')
    .optional()
    .describe('how long a replaced snapshot stays readable before its files are deleted; default "7 days"'),
});
